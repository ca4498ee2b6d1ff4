#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H

// Linux calls that Swift's Glibc module does not export: xattrs (sys/xattr.h), the
// CLOEXEC-at-creation variants of pipe/accept (GNU extensions), so descriptors never leak
// into programs the daemon starts, syncfs, and splice with the pipe calls around it.
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <fcntl.h>
#include <spawn.h>

// GNU extensions, declared here rather than with _GNU_SOURCE, which would change the
// meaning of the system headers that Swift's Glibc module also imports.
extern int pipe2(int fds[2], int flags);
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int syncfs(int fd);
extern ssize_t splice(int in, int64_t *in_offset, int out, int64_t *out_offset, size_t length, unsigned int flags);

/// Moves up to `length` bytes of a file's pages from `*offset` into a pipe (splice(2),
/// SPLICE_F_NONBLOCK: a full pipe fails with EAGAIN instead of waiting for a reader).
static inline ssize_t CSystemShims_splice_to_pipe(int fd, int64_t *offset, int pipe, size_t length) {
    return splice(fd, offset, pipe, NULL, length, 2 /* SPLICE_F_NONBLOCK */);
}

/// Sets a pipe's capacity in bytes (F_SETPIPE_SZ, a GNU name); returns it, or -1.
static inline int CSystemShims_set_pipe_size(int fd, int bytes) {
    return fcntl(fd, 1031 /* F_SETPIPE_SZ */, bytes);
}

/// The bytes waiting in a pipe (FIONREAD), or -1.
static inline int CSystemShims_pipe_pending(int fd) {
    int pending = 0;
    return ioctl(fd, FIONREAD, &pending) == 0 ? pending : -1;
}

/// O_DIRECT, a GNU name: the open flag of I/O around the page cache, which the filesystem
/// sees in an open's flags.
static inline int CSystemShims_o_direct(void) {
    return __O_DIRECT;
}

static inline ssize_t CSystemShims_getxattr(const char *path, const char *name, void *value, size_t size) {
    return getxattr(path, name, value, size);
}

static inline int CSystemShims_setxattr(const char *path, const char *name, const void *value, size_t size) {
    return setxattr(path, name, value, size, 0);
}

/// The l- variants act on a symlink itself, never on what it points to.
static inline ssize_t CSystemShims_lgetxattr(const char *path, const char *name, void *value, size_t size) {
    return lgetxattr(path, name, value, size);
}

static inline int CSystemShims_lsetxattr(const char *path, const char *name, const void *value, size_t size) {
    return lsetxattr(path, name, value, size, 0);
}

static inline int CSystemShims_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

static inline int CSystemShims_accept_cloexec(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
}

/// The daemon must not inherit the launcher's other descriptors (a caller's pipes or
/// sockets would then never see end-of-file while the daemon runs).
static inline int CSystemShims_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

#endif
