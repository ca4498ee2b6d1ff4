#ifndef CFUSE3_SHIM_H
#define CFUSE3_SHIM_H

/* 314 = libfuse 3.14 API; since 3.12 the value is major*100+minor, and older
   values select compatibility macros (e.g. fuse_session_loop_mt) Swift cannot see.
   _FILE_OFFSET_BITS is deliberately not defined: it clashes with Glibc's module. */
#define FUSE_USE_VERSION 314

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <fuse_lowlevel.h>

/* FUSE_ARGS_INIT is a brace-initializer macro, which Swift does not import. */
static inline struct fuse_args cfuse_args_init(int argc, char **argv) {
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    return args;
}

/* fuse_session_new needs sizeof(struct fuse_lowlevel_ops) as compiled here, which Swift cannot spell. */
static inline struct fuse_session *cfuse_session_new(struct fuse_args *args,
                                                     const struct fuse_lowlevel_ops *ops,
                                                     void *userdata) {
    return fuse_session_new(args, ops, sizeof(*ops), userdata);
}

/* The loop config is opaque since 3.12; build, run and free it in one call.
   Returns 0, -errno, or the number of the signal that ended the loop. */
static inline int cfuse_session_loop_mt(struct fuse_session *se, unsigned int max_threads,
                                        unsigned int clone_fd) {
    struct fuse_loop_config *config = fuse_loop_cfg_create();
    if (config == NULL) {
        return -ENOMEM;
    }
    fuse_loop_cfg_set_max_threads(config, max_threads);
    fuse_loop_cfg_set_clone_fd(config, clone_fd);
    int result = fuse_session_loop_mt(se, config);
    fuse_loop_cfg_destroy(config);
    return result;
}

/* fuse_file_info flags are C bitfields, which Swift cannot set reliably. */
static inline void cfuse_fi_set_direct_io(struct fuse_file_info *fi, int value) {
    fi->direct_io = value ? 1 : 0;
}

/* Bitfield setter, see cfuse_fi_set_direct_io. */
static inline void cfuse_fi_set_keep_cache(struct fuse_file_info *fi, int value) {
    fi->keep_cache = value ? 1 : 0;
}

/* Bitfield setter, see cfuse_fi_set_direct_io. */
static inline void cfuse_fi_set_nonseekable(struct fuse_file_info *fi, int value) {
    fi->nonseekable = value ? 1 : 0;
}

/* Bitfield setter, see cfuse_fi_set_direct_io. */
static inline void cfuse_fi_set_cache_readdir(struct fuse_file_info *fi, int value) {
    fi->cache_readdir = value ? 1 : 0;
}

/* Bitfield setter, see cfuse_fi_set_direct_io. */
static inline void cfuse_fi_set_noflush(struct fuse_file_info *fi, int value) {
    fi->noflush = value ? 1 : 0;
}

#endif
