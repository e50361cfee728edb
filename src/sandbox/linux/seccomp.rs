//! A small seccomp filter, written as classic BPF: what Landlock does not cover.
//!
//! - **Sockets**, when the network is denied: `socket()` is refused for every address
//!   family but netlink's route protocol (interface lists and routes of this machine).
//!   That covers TCP and UDP over IPv4 and IPv6, unix sockets (a local daemon such as
//!   Docker's can reach the network or run code for the caller), raw packets, vsock, and
//!   netlink's other protocols (`sock_diag` lists every socket of the machine).
//!   `socketpair()` stays allowed for stream and seqpacket pairs, which only connect a
//!   process to itself or its children; a datagram pair is refused, since its sockets can
//!   `sendto` any pathname socket (`/dev/log`, journald).
//! - **Mounts**: `mount`, `umount2`, `pivot_root`, `mount_setattr` and the new mount API
//!   (`open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`). Landlock forbids
//!   the first three to a sandboxed process, but not `mount_setattr`, with which a command
//!   run as root (which keeps its capabilities inside the user namespace) could clear the
//!   read-only flag of the `.git` mount.
//! - **The kernel keyring** (`add_key`, `request_key`, `keyctl`): the session keyring the
//!   command inherits can hold tokens and Kerberos tickets.
//! - **Terminal injection**: `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` push keystrokes into
//!   a terminal's input, which a shell would run after metron exits. The command has no
//!   controlling terminal (it starts its own session), and this is a second lock.
//! - **io_uring**, which can open sockets and files without the system calls this filter
//!   sees.
//!
//! Anything else is allowed; a system call from another architecture's table (x32, or
//! 32-bit calls on a 64-bit kernel) is refused, since the numbers checked here would not
//! match it.

/// The architecture this filter is built for, as the kernel reports it in `seccomp_data`.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// System calls numbered at or above this on x86_64 are the x32 ABI's.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

// Offsets in `struct seccomp_data`: nr, arch, instruction pointer, then six 64-bit
// arguments; the low half of each comes first on the little-endian targets built here.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const fn arg_low(n: u32) -> u32 {
    16 + 8 * n
}

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
#[cfg(target_arch = "x86_64")]
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const TIOCLINUX: u32 = 0x541C;

const BPF_ALU_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;

/// System calls refused whatever the policy (see the module documentation).
const REFUSED: &[libc::c_long] = &[
    libc::SYS_io_uring_setup,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_mount_setattr,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
];

fn load(offset: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_LD_W_ABS,
        jt: 0,
        jf: 0,
        k: offset,
    }
}

/// `A &= k`.
fn and(k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_ALU_AND_K,
        jt: 0,
        jf: 0,
        k,
    }
}

fn ret(value: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: value,
    }
}

fn deny(errno: i32) -> libc::sock_filter {
    ret(RET_ERRNO | (errno as u32 & 0xffff))
}

/// `if A == k { skip `jt` } else { skip `jf` }`.
fn jump_eq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_JEQ_K,
        jt,
        jf,
        k,
    }
}

/// The filter: `deny_network` adds the socket rule.
pub(crate) fn filter(deny_network: bool) -> Vec<libc::sock_filter> {
    let mut prog = vec![
        load(OFFSET_ARCH),
        jump_eq(AUDIT_ARCH, 1, 0),
        deny(libc::ENOSYS),
    ];
    prog.push(load(OFFSET_NR));
    #[cfg(target_arch = "x86_64")]
    prog.extend([
        libc::sock_filter {
            code: BPF_JGE_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        deny(libc::ENOSYS),
    ]);
    let nr = |call: libc::c_long| u32::try_from(call).unwrap_or(u32::MAX);
    // Refused outright: io_uring, the mount family and the keyring.
    for call in REFUSED {
        prog.extend([jump_eq(nr(*call), 0, 1), deny(libc::EPERM)]);
    }
    // ioctl: the two requests that type into a terminal.
    prog.extend([
        jump_eq(nr(libc::SYS_ioctl), 0, 4),
        load(arg_low(1)),
        jump_eq(libc::TIOCSTI as u32, 1, 0),
        jump_eq(TIOCLINUX, 0, 1),
        deny(libc::EPERM),
    ]);
    if deny_network {
        // After the ioctl block the accumulator may hold an argument, not the number.
        prog.push(load(OFFSET_NR));
        // socket(domain, type, protocol): netlink's route protocol only.
        prog.extend([
            jump_eq(nr(libc::SYS_socket), 0, 5),
            load(arg_low(0)),
            jump_eq(libc::AF_NETLINK as u32, 0, 2),
            load(arg_low(2)),
            jump_eq(libc::NETLINK_ROUTE as u32, 1, 0),
            deny(libc::EACCES),
        ]);
        // socketpair(domain, type, ...): stream and seqpacket pairs only (the type's low
        // four bits; the rest are SOCK_NONBLOCK and SOCK_CLOEXEC).
        prog.push(load(OFFSET_NR));
        prog.extend([
            jump_eq(nr(libc::SYS_socketpair), 0, 5),
            load(arg_low(1)),
            and(0xf),
            jump_eq(libc::SOCK_STREAM as u32, 2, 0),
            jump_eq(libc::SOCK_SEQPACKET as u32, 1, 0),
            deny(libc::EACCES),
        ]);
    }
    prog.push(ret(RET_ALLOW));
    prog
}

/// Installs `prog` on the calling thread (the child, between fork and exec; inherited
/// through exec and by every process it starts). `no_new_privs` must be set first.
/// Returns 0 or the errno.
pub(crate) fn install(prog: &[libc::sock_filter]) -> i32 {
    let fprog = libc::sock_fprog {
        len: u16::try_from(prog.len()).unwrap_or(0),
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `prog`, which outlives the call; the kernel copies it.
    let done = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &fprog as *const libc::sock_fprog,
        )
    };
    if done < 0 {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every jump lands inside the program, and it ends by returning: a malformed filter
    /// would be rejected by the kernel at the first command.
    fn assert_well_formed(prog: &[libc::sock_filter]) {
        for (at, insn) in prog.iter().enumerate() {
            if insn.code & 0x07 == libc::BPF_JMP as u16 {
                let far = at + 1 + usize::from(insn.jt.max(insn.jf));
                assert!(far < prog.len(), "jump at {at} leaves the program");
            }
        }
        let last = prog.last().map(|i| i.code);
        assert_eq!(last, Some(BPF_RET_K));
    }

    #[test]
    fn both_filters_are_well_formed() {
        assert_well_formed(&filter(true));
        assert_well_formed(&filter(false));
    }

    #[test]
    fn the_mount_family_and_the_keyring_are_refused_whatever_the_network() {
        for network_denied in [true, false] {
            let prog = filter(network_denied);
            for call in [
                libc::SYS_mount_setattr,
                libc::SYS_keyctl,
                libc::SYS_open_tree,
            ] {
                let at = prog
                    .iter()
                    .position(|i| i.code == BPF_JEQ_K && i.k == call as u32)
                    .expect("the call is checked");
                assert_eq!(prog[at + 1].code, BPF_RET_K, "it is refused at once");
            }
        }
    }

    #[test]
    fn the_socket_rule_is_only_there_when_the_network_is_denied() {
        let socket = |prog: &[libc::sock_filter]| {
            prog.iter()
                .any(|i| i.code == BPF_JEQ_K && i.k == libc::SYS_socket as u32)
        };
        assert!(socket(&filter(true)));
        assert!(!socket(&filter(false)));
    }
}
