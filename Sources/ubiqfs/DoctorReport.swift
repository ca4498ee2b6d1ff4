/// The checks' results as they are printed: `ok`, `warn` or `FAIL`, and a fix for each failure.
struct DoctorReport {
    private(set) var failures = 0

    mutating func pass(_ check: String, _ detail: String) { line("ok", check, detail) }
    mutating func warn(_ check: String, _ detail: String) { line("warn", check, detail) }

    mutating func fail(_ check: String, _ detail: String, fix: String) {
        failures += 1
        line("FAIL", check, detail)
        print("        fix: \(fix)")
    }

    private func line(_ mark: String, _ check: String, _ detail: String) {
        let padded = mark + String(repeating: " ", count: max(1, 6 - mark.count))
        print("  \(padded)\(check): \(detail)")
    }
}
