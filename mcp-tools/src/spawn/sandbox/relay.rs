//! The relay inside a command's network namespace: the only path from the
//! command to the outside, and it leads to the sandbox's proxy
//! ([`crate::net::proxy`]) and nowhere else.
//!
//! The namespace holds only a loopback interface. Between fork and exec,
//! the child brings `lo` up and listens on `127.0.0.1:`[`PORT`]
//! ([`Relay::listen`]); once the command's process (pid 1 of its PID
//! namespace) exists, the waiter forks the relay ([`Relay::run`]), a
//! process of the namespace that is not the command's child (so no shell
//! waits for it) and dies with the namespace. For each accepted
//! connection the relay forks a helper that connects to the proxy's Unix
//! socket (a path in the parent's filesystem, reachable from any network
//! namespace) and copies bytes both ways until both sides are done.
//!
//! Everything here runs between fork and exec, or in processes forked
//! from there that never exec: system calls on memory prepared before the
//! fork, no allocation, no lock.

use std::io;

use crate::net::proxy::PORT;

/// The relay of one command, made before the fork.
#[derive(Debug)]
pub(super) struct Relay {
    /// The proxy's socket address.
    proxy: libc::sockaddr_un,
}

/// Bytes copied per read.
const CHUNK: usize = 16 * 1024;

impl Relay {
    /// A relay to the proxy listening at `socket`; `None` when the path
    /// does not fit a socket address.
    pub(super) fn new(socket: &std::path::Path) -> Option<Relay> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = socket.as_os_str().as_bytes();
        // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
        #[allow(unsafe_code)]
        let mut proxy: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        if bytes.len() >= proxy.sun_path.len() || bytes.contains(&0) {
            return None;
        }
        proxy.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (dst, src) in proxy.sun_path.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        Some(Relay { proxy })
    }

    /// In the child, inside its new network namespace: `lo` up, and a
    /// socket listening on `127.0.0.1:PORT` (close-on-exec: the command
    /// never holds it). Returns the listening descriptor.
    #[allow(unsafe_code)]
    pub(super) fn listen(&self) -> io::Result<libc::c_int> {
        // SAFETY: system calls on stack memory only; async-signal-safe.
        unsafe {
            let probe = check(libc::socket(
                libc::AF_INET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
            ))?;
            let mut request: libc::ifreq = std::mem::zeroed();
            for (dst, src) in request.ifr_name.iter_mut().zip(b"lo\0") {
                *dst = *src as libc::c_char;
            }
            let up = if libc::ioctl(probe, libc::SIOCGIFFLAGS, &mut request) == 0 {
                request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
                libc::ioctl(probe, libc::SIOCSIFFLAGS, &request)
            } else {
                -1
            };
            let up = check(up);
            libc::close(probe);
            up?;
            let listener = check(libc::socket(
                libc::AF_INET,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
            ))?;
            let mut address: libc::sockaddr_in = std::mem::zeroed();
            address.sin_family = libc::AF_INET as libc::sa_family_t;
            address.sin_port = PORT.to_be();
            address.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let bound = check(libc::bind(
                listener,
                (&raw const address).cast(),
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ))
            .and_then(|_| check(libc::listen(listener, 128)));
            if let Err(e) = bound {
                libc::close(listener);
                return Err(e);
            }
            Ok(listener)
        }
    }

    /// Forks the relay process (from the waiter, after the command's
    /// process exists, so the relay is not pid 1). Failure is silent:
    /// the command then simply has no network.
    #[allow(unsafe_code)]
    pub(super) fn spawn(&self, listener: libc::c_int) {
        // SAFETY: the raw clone system call (no atfork handlers, no
        // locks); the child only issues system calls and never returns.
        unsafe {
            let pid = super::contain::raw_fork();
            if pid == 0 {
                self.run(listener);
            }
        }
    }

    /// The relay: accepts forever, one forked helper per connection.
    #[allow(unsafe_code)]
    unsafe fn run(&self, listener: libc::c_int) -> ! {
        // SAFETY: system calls on stack memory only.
        unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            super::contain::close_all_but(listener);
            // Helpers are reaped by the kernel; a closed peer is an error,
            // not a death.
            super::contain::reset_signals(&[libc::SIGCHLD, libc::SIGPIPE]);
            loop {
                let client = libc::accept4(
                    listener,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                );
                if client < 0 {
                    let errno = *libc::__errno_location();
                    if errno == libc::EMFILE || errno == libc::ENFILE || errno == libc::ENOMEM {
                        let pause = libc::timespec {
                            tv_sec: 0,
                            tv_nsec: 50_000_000,
                        };
                        libc::nanosleep(&pause, std::ptr::null_mut());
                    }
                    continue;
                }
                let pid = super::contain::raw_fork();
                if pid == 0 {
                    libc::close(listener);
                    self.carry(client);
                    libc::_exit(0);
                }
                libc::close(client);
            }
        }
    }

    /// One helper: connects to the proxy and copies both ways; a side
    /// that ends is passed on as a half-close.
    #[allow(unsafe_code)]
    unsafe fn carry(&self, client: libc::c_int) {
        // SAFETY: system calls on stack memory only.
        unsafe {
            let proxy = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if proxy < 0
                || libc::connect(
                    proxy,
                    (&raw const self.proxy).cast(),
                    size_of::<libc::sockaddr_un>() as libc::socklen_t,
                ) != 0
            {
                return;
            }
            let mut buf = [0u8; CHUNK];
            // [client → proxy, proxy → client]: still reading?
            let ends = [(client, proxy), (proxy, client)];
            let mut open = [true, true];
            while open[0] || open[1] {
                let mut polls = [
                    libc::pollfd {
                        fd: if open[0] { client } else { -1 },
                        events: libc::POLLIN,
                        revents: 0,
                    },
                    libc::pollfd {
                        fd: if open[1] { proxy } else { -1 },
                        events: libc::POLLIN,
                        revents: 0,
                    },
                ];
                if libc::poll(polls.as_mut_ptr(), 2, -1) < 0 {
                    if *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    return;
                }
                for (i, &(from, to)) in ends.iter().enumerate() {
                    if !open[i] || polls[i].revents == 0 {
                        continue;
                    }
                    let n = libc::read(from, buf.as_mut_ptr().cast(), CHUNK);
                    if n <= 0 {
                        if n < 0 && *libc::__errno_location() == libc::EINTR {
                            continue;
                        }
                        open[i] = false;
                        libc::shutdown(to, libc::SHUT_WR);
                        continue;
                    }
                    if !write_all(to, &buf[..n as usize]) {
                        return;
                    }
                }
            }
        }
    }
}

/// Writes all of `bytes` to `fd`; false when the peer is gone.
#[allow(unsafe_code)]
unsafe fn write_all(fd: libc::c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: a write from a live slice.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            // SAFETY: reading errno.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return false;
        }
        bytes = &bytes[n as usize..];
    }
    true
}

/// A system call's result, or its errno (no allocation: a raw error).
fn check(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}
