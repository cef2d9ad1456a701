// libnetloop_slow_clock.so: a process that runs as on a CPU at NETLOOP_CPU_CLOCK (0 < c <= 1) of
// this one's clock, preloaded (LD_PRELOAD) into every process of a host with `cpu_model: clock`
// (src/netloop/cpulimit.py).
//
// A slower clock stretches every piece of a program's work by 1/c. The shim measures that work
// as it happens (each thread's CPU time, user and kernel) and, whenever a thread is about to
// send what it computed (send, sendto, sendmsg, sendmmsg, write, writev) or to wait (poll,
// ppoll, select, pselect, epoll_wait, epoll_pwait), spends (1/c - 1) x the CPU time it used
// since it last did either, as extra work. So what a message costs to receive, handle and send
// takes 1/c times as long, whatever its size, without the scheduler grain of a CPU quota; work
// done while the host was otherwise idle is stretched before the thread sleeps again, not
// charged to the next message; a busy process saturates its core at 1/c of the rate it would
// reach, so its knee falls with the clock too. Not stretched: the kernel's softirq work (a
// received packet is charged to whichever task the interrupt found), and sleeping.
//
// Async-signal-safety is not needed here: the wrappers only read clocks and spin.

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace
{

int64_t
Now(clockid_t clock)
{
    timespec ts;
    clock_gettime(clock, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/// (1/c - 1) from NETLOOP_CPU_CLOCK; 0 (stretch nothing) when unset or out of (0, 1].
double
ExtraPerWork()
{
    const char* env = std::getenv("NETLOOP_CPU_CLOCK");
    if (!env)
    {
        return 0.0;
    }
    char* end = nullptr;
    double c = std::strtod(env, &end);
    return (end != env && c > 0.0 && c < 1.0) ? 1.0 / c - 1.0 : 0.0;
}

const double kExtra = ExtraPerWork();
/// This thread's CPU time already stretched (the extra work spent for it included) [ns]; -1:
/// not yet measured (what a thread did before its first output or wait is not owed).
thread_local int64_t t_accounted = -1;

/// Before an output or a wait: spend the extra work owed for what this thread did since its
/// last one.
void
Stretch()
{
    if (kExtra <= 0.0)
    {
        return;
    }
    const int64_t now = Now(CLOCK_THREAD_CPUTIME_ID);
    const int64_t owed = t_accounted < 0 ? 0 : static_cast<int64_t>((now - t_accounted) * kExtra);
    const int64_t until = now + owed;
    int64_t spent = now;
    while (spent < until)
    {
        spent = Now(CLOCK_THREAD_CPUTIME_ID);
    }
    t_accounted = spent; // the extra work itself is not owed again
}

template <typename F>
F
Next(const char* name)
{
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C"
{

ssize_t
send(int fd, const void* buf, size_t len, int flags)
{
    static auto real = Next<ssize_t (*)(int, const void*, size_t, int)>("send");
    Stretch();
    return real(fd, buf, len, flags);
}

ssize_t
sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to, socklen_t tolen)
{
    static auto real =
        Next<ssize_t (*)(int, const void*, size_t, int, const sockaddr*, socklen_t)>("sendto");
    Stretch();
    return real(fd, buf, len, flags, to, tolen);
}

ssize_t
sendmsg(int fd, const msghdr* msg, int flags)
{
    static auto real = Next<ssize_t (*)(int, const msghdr*, int)>("sendmsg");
    Stretch();
    return real(fd, msg, flags);
}

int
sendmmsg(int fd, mmsghdr* msgs, unsigned int n, int flags)
{
    static auto real = Next<int (*)(int, mmsghdr*, unsigned int, int)>("sendmmsg");
    Stretch();
    return real(fd, msgs, n, flags);
}

ssize_t
write(int fd, const void* buf, size_t len)
{
    static auto real = Next<ssize_t (*)(int, const void*, size_t)>("write");
    Stretch();
    return real(fd, buf, len);
}

ssize_t
writev(int fd, const iovec* iov, int n)
{
    static auto real = Next<ssize_t (*)(int, const iovec*, int)>("writev");
    Stretch();
    return real(fd, iov, n);
}

int
poll(pollfd* fds, nfds_t n, int timeout)
{
    static auto real = Next<int (*)(pollfd*, nfds_t, int)>("poll");
    Stretch();
    return real(fds, n, timeout);
}

int
ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask)
{
    static auto real = Next<int (*)(pollfd*, nfds_t, const timespec*, const sigset_t*)>("ppoll");
    Stretch();
    return real(fds, n, timeout, mask);
}

int
select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* timeout)
{
    static auto real = Next<int (*)(int, fd_set*, fd_set*, fd_set*, timeval*)>("select");
    Stretch();
    return real(n, r, w, e, timeout);
}

int
pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout, const sigset_t* mask)
{
    static auto real =
        Next<int (*)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*)>("pselect");
    Stretch();
    return real(n, r, w, e, timeout, mask);
}

int
epoll_wait(int fd, epoll_event* events, int n, int timeout)
{
    static auto real = Next<int (*)(int, epoll_event*, int, int)>("epoll_wait");
    Stretch();
    return real(fd, events, n, timeout);
}

int
epoll_pwait(int fd, epoll_event* events, int n, int timeout, const sigset_t* mask)
{
    static auto real = Next<int (*)(int, epoll_event*, int, int, const sigset_t*)>("epoll_pwait");
    Stretch();
    return real(fd, events, n, timeout, mask);
}

} // extern "C"
