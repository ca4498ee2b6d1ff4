import CloudFileSystem
import ContainerStore
import DeviceFixture
import Foundation
import Glibc
import Inodes
import Testing

/// Setuid and setgid follow Linux's rules where the kernel leaves them to the filesystem
/// (xfstests generic/193 and generic/683).
@Suite struct SetIDTests {
    func file(mode: UInt32, on device: TestDevice) async throws -> Inode {
        try await device.write("tool", "#!/bin/sh\n")
        let ino = try #require(device.inode("tool"))
        _ = try await device.core.setAttributes(ino, AttributeChanges(mode: mode), handle: nil)
        return ino
    }

    /// chown drops setuid always, setgid only with group execute (without it, setgid marks
    /// mandatory locking and stays).
    @Test func chownClearsSetuidAndSetgidOnlyWhereItMeansRunAsGroup() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        for (mode, expected) in [(UInt32(0o6755), UInt32(0o755)), (0o6745, 0o2745), (0o2745, 0o2745), (0o4700, 0o700)] {
            let ino = try await file(mode: mode, on: device)
            let after = try await device.core.setAttributes(ino, AttributeChanges(uid: 1234, gid: 1234), handle: nil)
            #expect(after.permissions == expected, "chown of a file with mode \(String(mode, radix: 8))")
        }
        await device.shutdown()
    }

    /// An allocation by another user clears them as a write does (setgid without group
    /// execute only for a caller outside the file's group); root's does not.
    @Test func fallocateByAnotherUserClearsSetuidAndSetgid() async throws {
        let device = try await TestDevice(store: InMemoryStore(), name: "a")
        for (caller, mode, expected) in [
            (Caller(uid: 1234, gid: 1234, pid: 1), UInt32(0o6755), UInt32(0o755)),
            (Caller(uid: 1234, gid: 1234, pid: 1), 0o2745, 0o745),
            (Caller(uid: 1234, gid: getgid(), pid: 1), 0o2745, 0o2745),
            (Caller(uid: 0, gid: 0, pid: 1), 0o6755, 0o6755),
        ] {
            let ino = try await file(mode: mode, on: device)
            let handle = try await device.open(ino, flags: O_WRONLY)
            try device.core.fallocate(handle: handle, mode: 0, offset: 0, length: 8192, caller: caller)
            device.core.release(handle: handle)
            #expect(try device.core.attributes(ino).permissions == expected, "fallocate by uid \(caller.uid) of mode \(String(mode, radix: 8))")
            #expect(try device.core.attributes(ino).size == 8192)
        }
        await device.shutdown()
    }
}
