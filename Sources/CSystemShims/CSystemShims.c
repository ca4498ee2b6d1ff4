// The module is header-only (static inline shims); this file gives the target a source.
