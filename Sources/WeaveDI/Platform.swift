#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes bytes to standard error; the only I/O the library does on its own.
func writeToStandardError(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Int {
    write(2, bytes, count)
}

/// The value of environment variable `name`, or nil.
func environmentValue(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    return String(cString: raw)
}

/// Whether the variable `name` is unset or valid UTF-8 (`environmentValue` reads bytes that
/// are not as U+FFFD).
func environmentValueIsUTF8(_ name: String) -> Bool {
    guard let raw = getenv(name) else { return true }
    return String(validatingCString: raw) != nil
}

/// Seconds since the Unix epoch, with nanoseconds, from the realtime clock.
func wallClockNow() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
