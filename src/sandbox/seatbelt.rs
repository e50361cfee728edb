//! The macOS half of the command sandbox: a Seatbelt profile written from a [`Policy`],
//! applied by running the command under `/usr/bin/sandbox-exec -p PROFILE`.
//!
//! What the profile guarantees, for the command and every process it starts (children
//! inherit the sandbox and cannot leave it):
//!
//! - whatever no rule allows is denied (`(deny default)`), so a kind of access nobody
//!   thought of stays closed;
//! - files can be read everywhere except the protected paths, which can be neither read
//!   nor written, nor connected to as Unix sockets (a GnuPG agent or an SSH control socket
//!   kept there), whatever another rule allows;
//! - files can be written only in the project root, the session's temp directory, the
//!   extra writable places and a few device files, and never in the read-only paths
//!   inside the root (`.git`, or its hooks and config; metron's own files);
//! - no hard link can be made anywhere (no rule allows `file-link`), so a protected or
//!   read-only file cannot get a second name in the root to be read or written through;
//! - without the network, no socket connects anywhere, IP or Unix-domain;
//! - signals reach only processes in the same sandbox;
//! - only a few Mach services can be reached (directory lookups, preferences, change
//!   notifications, and with the network, name resolution and certificate checks), so a
//!   command cannot ask a service outside the sandbox to act for it: no LaunchServices
//!   (`open`), no Apple Events, no keychain, no pasteboard;
//! - sysctls are read from a list, so another process's arguments and environment
//!   (`kern.procargs2`) stay out of reach.
//!
//! What Seatbelt cannot do here:
//!
//! - hide what is not protected: the whole disk is readable, including other projects,
//!   `~/Library` (browser profiles, mail) and the keychain's encrypted database files;
//! - see through a hard link made before the command ran: rules match paths, so an old
//!   hard link in the root to a protected file reads through;
//! - choose hosts: the network is all or nothing, and with it come the Unix sockets
//!   outside protected paths (the SSH agent, Docker's socket);
//! - limit CPU, memory, processes or time: the caller does that;
//! - be relied on forever: `sandbox-exec` has been marked deprecated in its manual page
//!   for years, though every macOS still ships it.
//!
//! Rule order matters: when several rules match, the last one wins. The profile is
//! therefore written as: the fixed rules, reads, writes, the read-only denials, the
//! network, and the protected denials last, so no grant can reopen them.
//!
//! Paths are written as they are in the policy (already canonical on the Mac, so `/tmp`
//! is `/private/tmp`), as SBPL string literals with backslash and double quote escaped. A
//! path with a control character (a line break, a NUL) or one that is not UTF-8 cannot be
//! named faithfully, and a rule about another path would be a hole, so [`profile`]
//! refuses it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::policy::{DEVICES, Policy};

/// `sandbox-exec` by absolute path, never looked up on PATH: a command's PATH is not
/// trusted, and a same-named program earlier on it would run the command unconfined.
pub(crate) const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The start of every profile, the same for every policy: deny by default, then what
/// ordinary programs (shells, compilers, test runners) need to start and run.
const BASE: &str = r#"(version 1)
(deny default)
; Programs start programs; each child inherits this sandbox and cannot leave it.
(allow process-exec process-fork)
; Signals and process inspection only inside this sandbox: a test runner and its workers.
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
; Loading compiled code: dynamic libraries, Python and Node extension modules.
(allow file-map-executable)
; POSIX shared memory and semaphores: Python multiprocessing, build servers.
(allow ipc-posix-shm* ipc-posix-sem*)
; Preferences are read (xcrun and other Core Foundation tools), never written.
(allow user-preference-read)
; Processor details through the host port: Node's os.cpus(), which sizes worker pools.
(allow mach-host*)
; A Java runtime asks for its CPU type through a sysctl that is a write in form only.
(allow sysctl-write (sysctl-name "kern.grade_cputype"))
"#;

/// Reading is open everywhere; the protected paths are taken back at the end.
const READS: &str = "; Reading is open everywhere; protected paths are taken back last.\n\
                     (allow file-read*)\n";

/// Sysctls read by name: the system's identity and limits that libc, language runtimes
/// and `uname` ask for. Not a blanket `sysctl-read`, which would include
/// `kern.procargs2`: the arguments and environment of the user's other processes.
const SYSCTL_NAMES: &[&str] = &[
    "kern.argmax",
    "kern.boottime",
    "kern.clockrate",
    "kern.hostname",
    "kern.hv_vmm_present",
    "kern.maxfiles",
    "kern.maxfilesperproc",
    "kern.maxproc",
    "kern.ngroups",
    "kern.osproductversion",
    "kern.osrelease",
    "kern.ostype",
    "kern.osvariant_status",
    "kern.osversion",
    "kern.secure_kernel",
    "kern.usrstack64",
    "kern.version",
    "sysctl.proc_cputype",
    "sysctl.proc_native",
    "sysctl.proc_translated",
    "vm.loadavg",
    "vm.swapusage",
];

/// Sysctl families read by prefix: hardware and CPU description, one process's (or
/// process group's) status record (no arguments, no environment), the interface list
/// behind `getifaddrs`, and the POSIX constants behind `confstr`.
const SYSCTL_PREFIXES: &[&str] = &[
    "hw.",
    "machdep.cpu.",
    "kern.proc.pid.",
    "kern.proc.pgrp.",
    "net.routetable.",
    "user.",
];

/// Mach services any command may reach. Each answers questions and changes nothing
/// outside the sandbox on the command's behalf.
const MACH_SERVICES: &[&str] = &[
    // User and group lookups (getpwuid, getgrgid): git, ssh, `id`, home directories.
    "com.apple.system.opendirectoryd.libinfo",
    // Group membership checks.
    "com.apple.system.opendirectoryd.membership",
    // notify(3), which libc and Core Foundation use to hear of time zone changes.
    "com.apple.system.notification_center",
    // Reading preferences (paired with `user-preference-read`).
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    // The per-user temp and cache directories (confstr): clang's module cache, xcrun.
    "com.apple.bsd.dirhelper",
];

/// Mach services for a command allowed the network: proxy and resolver configuration,
/// name resolution, and certificate trust and revocation checks for TLS. Not
/// `com.apple.SecurityServer`: it opens the login keychain, and with the network a
/// credential read there could leave the machine.
const NETWORK_MACH_SERVICES: &[&str] = &[
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.dnssd.service",
    "com.apple.networkd",
    "com.apple.trustd",
    "com.apple.trustd.agent",
    "com.apple.ocspd",
];

/// Where a process re-opens a descriptor it already holds (`> /dev/stderr` in a script):
/// the open duplicates the descriptor with no more access than it had, so writing there
/// grants nothing new.
const DESCRIPTOR_DIR: &str = "/dev/fd";

/// The Seatbelt profile that confines a command to `policy`, as text for
/// `sandbox-exec -p`.
///
/// An error when a path in the policy cannot be written into a profile (a control
/// character, or not UTF-8): one line, without the `metron: ` prefix, ending with what
/// the user can do.
pub(crate) fn profile(policy: &Policy) -> Result<String, String> {
    let mut text = String::from(BASE);
    text.push_str(&system_rules());
    text.push_str(READS);
    text.push_str(&writes(policy)?);
    text.push_str(&read_only(policy)?);
    text.push_str(&network(policy.network));
    text.push_str(&protected(policy)?);
    Ok(text)
}

/// The program to run and its arguments after `argv[0]`, for a `std::process::Command`
/// that runs `program` with `args` confined to `policy`: `sandbox-exec` by absolute path,
/// `-p` and the profile, `--`, then the command.
///
/// `--` ends `sandbox-exec`'s options, so a program whose name starts with `-` is still
/// the program. `sandbox-exec` runs `program` with `execvp`: a bare name is looked up on
/// the PATH the caller gives the `Command`. The same error as [`profile`].
pub(crate) fn wrap(
    policy: &Policy,
    program: &Path,
    args: &[String],
) -> Result<(PathBuf, Vec<OsString>), String> {
    let profile = profile(policy)?;
    let mut argv: Vec<OsString> = Vec::with_capacity(args.len() + 4);
    argv.push("-p".into());
    argv.push(profile.into());
    argv.push("--".into());
    argv.push(program.as_os_str().to_owned());
    argv.extend(args.iter().map(OsString::from));
    Ok((PathBuf::from(SANDBOX_EXEC), argv))
}

/// The sysctl and Mach service rules, from their lists.
fn system_rules() -> String {
    let mut sysctls: Vec<String> = SYSCTL_NAMES
        .iter()
        .map(|name| filter("sysctl-name", name))
        .collect();
    sysctls.extend(
        SYSCTL_PREFIXES
            .iter()
            .map(|prefix| filter("sysctl-name-prefix", prefix)),
    );
    let mut text = String::from("; System facts that runtimes and uname read.\n");
    text.push_str(&rule("allow", "sysctl-read", &sysctls));
    text.push_str("; Services that answer questions and act for no one.\n");
    text.push_str(&rule("allow", "mach-lookup", &global_names(MACH_SERVICES)));
    text
}

/// Writes: the root, the temp directory and the extra writable places, each with
/// everything beneath it; the device files by exact path (a rule on `/dev/null` must not
/// reach anything else); the descriptor directory. Also the terminal controls (`ioctl`)
/// programs use on those devices.
fn writes(policy: &Policy) -> Result<String, String> {
    let places = [policy.root.as_path(), policy.temp.as_path()]
        .into_iter()
        .chain(policy.writable.iter().map(PathBuf::as_path));
    let mut filters = path_filters(&["subpath"], places)?;
    let devices: Vec<String> = DEVICES
        .iter()
        .map(|device| filter("literal", device))
        .collect();
    filters.extend(devices.iter().cloned());
    filters.push(filter("subpath", DESCRIPTOR_DIR));
    let mut text = String::from(
        "; Writing: the project, the session's temp dir, the extra places, a few devices.\n",
    );
    text.push_str(&rule("allow", "file-write*", &filters));
    text.push_str(&rule("allow", "file-ioctl", &devices));
    Ok(text)
}

/// The places inside the root that are never writable, after the root's grant so they
/// win over it. Reading them stays allowed (`git status` reads `.git`).
fn read_only(policy: &Policy) -> Result<String, String> {
    if policy.read_only.is_empty() {
        return Ok(String::new());
    }
    let filters = path_filters(
        &["literal", "subpath"],
        policy.read_only.iter().map(PathBuf::as_path),
    )?;
    let mut text = String::from("; Inside the project but never writable.\n");
    text.push_str(&rule("deny", "file-write*", &filters));
    Ok(text)
}

/// The network: all of it, with the services resolution and TLS need, or none of it
/// (local Unix-socket connections are network traffic to Seatbelt, so they go too).
fn network(allowed: bool) -> String {
    if !allowed {
        return String::from(
            "; No network: no IP traffic, no Unix-domain socket connections.\n\
             (deny network*)\n",
        );
    }
    let mut text = String::from("; Network allowed by the user's config.\n(allow network*)\n");
    text.push_str("(allow system-socket)\n");
    text.push_str(&rule(
        "allow",
        "mach-lookup",
        &global_names(NETWORK_MACH_SERVICES),
    ));
    text
}

/// The protected paths, last so that no grant above (a writable place around them, the
/// network) reopens them: no reading, no writing, and no connecting to a socket there.
/// Each path is named exactly and with everything beneath it, since it may be a file, a
/// directory or not exist yet.
fn protected(policy: &Policy) -> Result<String, String> {
    if policy.protected.is_empty() {
        return Ok(String::new());
    }
    let filters = path_filters(
        &["literal", "subpath"],
        policy.protected.iter().map(PathBuf::as_path),
    )?;
    let mut text = String::from("; Protected: denied whatever a rule above allows.\n");
    text.push_str(&rule("deny", "file-read* file-write*", &filters));
    text.push_str(&rule("deny", "network-outbound", &filters));
    Ok(text)
}

/// One rule: `(action operations filter...)`, a filter to a line so the profile can be
/// read when a denial needs explaining.
fn rule(action: &str, operations: &str, filters: &[String]) -> String {
    let mut text = format!("({action} {operations}");
    for filter in filters {
        text.push_str("\n  ");
        text.push_str(filter);
    }
    text.push_str(")\n");
    text
}

/// `(kind "value")`, the value escaped as an SBPL string.
fn filter(kind: &str, value: &str) -> String {
    format!("({kind} \"{}\")", escape(value))
}

/// A `global-name` filter for each Mach service.
fn global_names(services: &[&str]) -> Vec<String> {
    services
        .iter()
        .map(|service| filter("global-name", service))
        .collect()
}

/// A filter of each kind for each path, in path order; the error of [`path_text`] for
/// the first path that cannot be named.
fn path_filters<'a>(
    kinds: &[&str],
    paths: impl IntoIterator<Item = &'a Path>,
) -> Result<Vec<String>, String> {
    let mut filters = Vec::new();
    for path in paths {
        let text = path_text(path)?;
        filters.extend(kinds.iter().map(|kind| filter(kind, text)));
    }
    Ok(filters)
}

/// `path` as text a profile can hold. A path that is not UTF-8 or has a control
/// character is refused rather than approximated: a rule about a slightly different
/// path would leave the real one unconfined or unprotected.
fn path_text(path: &Path) -> Result<&str, String> {
    let Some(text) = path.to_str() else {
        return Err(unnameable(path, "is not valid UTF-8"));
    };
    if text.chars().any(char::is_control) {
        return Err(unnameable(
            path,
            "contains a line break or another control character",
        ));
    }
    Ok(text)
}

/// The refusal for a path a profile cannot name, on one line (the path is quoted with
/// its control characters escaped), ending with what the user can do.
fn unnameable(path: &Path, why: &str) -> String {
    format!(
        "cannot confine the command: the path {path:?} {why}, which a macOS sandbox \
         profile cannot name; rename it, or remove it from command_writable_paths or \
         command_protected_paths in your config"
    )
}

/// `text` with backslash and double quote escaped, for the inside of an SBPL string.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '"') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policy with a root, its `.git`, a temp dir and two protected paths (one a
    /// directory, one a file); no extras, no network. Built on the probe's policy so a
    /// field added to `Policy` later does not break these tests.
    fn policy() -> Policy {
        Policy {
            root: PathBuf::from("/p"),
            read_only: vec![PathBuf::from("/p/.git")],
            temp: PathBuf::from("/t"),
            writable: Vec::new(),
            protected: vec![PathBuf::from("/h/.ssh"), PathBuf::from("/h/.netrc")],
            network: false,
            ..Policy::probe(Path::new("/p"))
        }
    }

    /// The profile for `policy`, which has only plain paths.
    fn text(policy: &Policy) -> String {
        profile(policy).expect("a profile for plain paths")
    }

    /// Each top-level form of `text`, skipping `;` comments and honouring string escapes.
    /// Panics on unbalanced parentheses or an unterminated string, so every test that
    /// uses it also checks the profile still parses.
    fn forms(text: &str) -> Vec<&str> {
        let bytes = text.as_bytes();
        let (mut out, mut depth, mut start, mut at) = (Vec::new(), 0usize, 0, 0);
        let mut in_string = false;
        while at < bytes.len() {
            match (in_string, bytes[at]) {
                (true, b'\\') => at += 1,
                (true, b'"') | (false, b'"') => in_string = !in_string,
                (false, b';') => {
                    while at < bytes.len() && bytes[at] != b'\n' {
                        at += 1;
                    }
                }
                (false, b'(') => {
                    if depth == 0 {
                        start = at;
                    }
                    depth += 1;
                }
                (false, b')') => {
                    assert!(depth > 0, "unbalanced ) at {at} in\n{text}");
                    depth -= 1;
                    if depth == 0 {
                        out.push(&text[start..=at]);
                    }
                }
                _ => {}
            }
            at += 1;
        }
        assert!(!in_string && depth == 0, "unterminated form in\n{text}");
        out
    }

    /// The index of the only form that starts with `head` and contains every one of
    /// `parts`.
    fn only(forms: &[&str], head: &str, parts: &[&str]) -> usize {
        let found: Vec<usize> = (0..forms.len())
            .filter(|&i| forms[i].starts_with(head) && parts.iter().all(|p| forms[i].contains(p)))
            .collect();
        assert_eq!(found.len(), 1, "{head} {parts:?} in {forms:#?}");
        found[0]
    }

    /// The index of the last allow rule.
    fn last_allow(forms: &[&str]) -> usize {
        forms
            .iter()
            .rposition(|form| form.starts_with("(allow"))
            .expect("some allow rule")
    }

    #[test]
    fn profile_starts_closed() {
        let text = text(&policy());
        let forms = forms(&text);
        assert_eq!(forms[0], "(version 1)");
        assert_eq!(forms[1], "(deny default)");
        assert!(text.starts_with("(version 1)\n(deny default)\n"));
    }

    #[test]
    fn protected_denials_come_after_every_allow_even_a_covering_grant() {
        let mut policy = policy();
        policy.writable = vec![PathBuf::from("/h")];
        policy.network = true;
        let text = text(&policy);
        let forms = forms(&text);
        let parts = [
            r#"(literal "/h/.ssh")"#,
            r#"(subpath "/h/.ssh")"#,
            r#"(literal "/h/.netrc")"#,
            r#"(subpath "/h/.netrc")"#,
        ];
        let files = only(&forms, "(deny file-read* file-write*", &parts);
        let sockets = only(&forms, "(deny network-outbound", &parts);
        let last = last_allow(&forms);
        assert!(last < files && last < sockets, "{text}");
        let grant = only(&forms, "(allow file-write*", &[r#"(subpath "/h")"#]);
        assert!(grant < files);
        let mentions = forms.iter().filter(|f| f.contains("/h/.")).count();
        assert_eq!(mentions, 2, "protected paths only in their denials: {text}");
    }

    #[test]
    fn git_read_only_rule_comes_after_the_root_write_allow() {
        let text = text(&policy());
        let forms = forms(&text);
        let root = only(&forms, "(allow file-write*", &[r#"(subpath "/p")"#]);
        let git = only(
            &forms,
            "(deny file-write*",
            &[r#"(literal "/p/.git")"#, r#"(subpath "/p/.git")"#],
        );
        assert!(root < git, "{text}");
        assert!(
            forms[git + 1..]
                .iter()
                .all(|f| !(f.starts_with("(allow") && f.contains("/p"))),
            "nothing after the denial grants the root again: {text}"
        );
    }

    #[test]
    fn read_only_paths_stay_readable() {
        let text = text(&policy());
        let forms = forms(&text);
        let git = only(&forms, "(deny", &[r#"(subpath "/p/.git")"#]);
        assert!(!forms[git].contains("file-read"), "{}", forms[git]);
    }

    #[test]
    fn network_is_denied_by_default() {
        let text = text(&policy());
        let forms = forms(&text);
        let deny = only(&forms, "(deny network*)", &[]);
        assert!(last_allow(&forms) < deny);
        assert!(!forms.iter().any(|f| f.starts_with("(allow network")));
        assert!(!text.contains("system-socket"));
        assert!(!text.contains("com.apple.trustd"));
    }

    #[test]
    fn network_is_allowed_when_the_policy_says_so() {
        let mut policy = policy();
        policy.network = true;
        let text = text(&policy);
        let forms = forms(&text);
        let allow = only(&forms, "(allow network*)", &[]);
        let services = only(&forms, "(allow mach-lookup", &[r#""com.apple.trustd""#]);
        assert!(!forms.iter().any(|f| f.starts_with("(deny network*")));
        let sockets = only(&forms, "(deny network-outbound", &[r#""/h/.ssh""#]);
        assert!(allow < sockets && services < sockets);
    }

    #[test]
    fn no_mach_lookup_reaches_the_keychain() {
        for network in [false, true] {
            let mut policy = policy();
            policy.network = network;
            let text = text(&policy);
            assert!(!text.contains("SecurityServer"), "{text}");
            assert!(!text.contains("securityd"), "{text}");
            let forms = forms(&text);
            assert!(!forms.contains(&"(allow mach-lookup)"), "{text}");
        }
    }

    #[test]
    fn sysctl_reads_are_listed_not_open() {
        let text = text(&policy());
        let forms = forms(&text);
        let reads = only(
            &forms,
            "(allow sysctl-read",
            &[r#"(sysctl-name "kern.osrelease")"#],
        );
        assert_ne!(forms[reads], "(allow sysctl-read)");
        assert!(!text.contains("procargs"));
        assert!(!text.contains(r#""kern.proc.""#));
    }

    #[test]
    fn a_quote_and_a_backslash_in_a_path_are_escaped() {
        let mut policy = policy();
        policy.writable = vec![PathBuf::from(r#"/p q/a"b\c"#)];
        let text = text(&policy);
        let forms = forms(&text);
        only(
            &forms,
            "(allow file-write*",
            &[r#"(subpath "/p q/a\"b\\c")"#],
        );
    }

    #[test]
    fn a_path_with_a_newline_is_refused() {
        let mut policy = policy();
        policy.protected.push(PathBuf::from("/h/a\nb"));
        let error = profile(&policy).expect_err("a newline cannot be named");
        assert!(!error.contains('\n'), "one line: {error}");
        assert!(error.contains(r#""/h/a\nb""#), "{error}");
        assert!(error.ends_with("in your config"), "{error}");
    }

    #[test]
    fn a_path_with_a_nul_is_refused() {
        let mut policy = policy();
        policy.root = PathBuf::from("/p\0q");
        let error = profile(&policy).expect_err("a NUL cannot be named");
        assert!(error.contains("control character"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let mut policy = policy();
        policy.read_only = vec![PathBuf::from(std::ffi::OsStr::from_bytes(b"/p/\xff"))];
        let error = profile(&policy).expect_err("bytes that are not UTF-8 cannot be named");
        assert!(error.contains("not valid UTF-8"), "{error}");
    }

    #[test]
    fn writable_extras_appear_in_the_write_grant() {
        let mut policy = policy();
        policy.writable = vec![PathBuf::from("/w/go-build"), PathBuf::from("/w/cargo")];
        let text = text(&policy);
        let forms = forms(&text);
        only(
            &forms,
            "(allow file-write*",
            &[
                r#"(subpath "/p")"#,
                r#"(subpath "/t")"#,
                r#"(subpath "/w/go-build")"#,
                r#"(subpath "/w/cargo")"#,
            ],
        );
    }

    #[test]
    fn devices_are_literals() {
        let text = text(&policy());
        let forms = forms(&text);
        let write = only(&forms, "(allow file-write*", &[]);
        let ioctl = only(&forms, "(allow file-ioctl", &[]);
        for device in DEVICES {
            let literal = format!("(literal \"{device}\")");
            assert!(
                forms[write].contains(&literal),
                "{device}: {}",
                forms[write]
            );
            assert!(
                forms[ioctl].contains(&literal),
                "{device}: {}",
                forms[ioctl]
            );
            assert!(
                !text.contains(&format!("(subpath \"{device}\")")),
                "{device}"
            );
        }
        assert!(!forms[write].contains(r#"(subpath "/dev")"#));
    }

    #[test]
    fn empty_lists_write_no_empty_rules() {
        let mut policy = policy();
        policy.read_only.clear();
        policy.protected.clear();
        let text = text(&policy);
        let forms = forms(&text);
        assert!(!forms.iter().any(|f| f.starts_with("(deny file")), "{text}");
        assert!(
            !forms
                .iter()
                .any(|f| f.starts_with("(deny network-outbound"))
        );
    }

    #[test]
    fn wrap_runs_sandbox_exec_by_absolute_path_then_the_command() {
        let policy = policy();
        let args = vec!["-c".to_string(), "cargo test".to_string()];
        let (program, argv) = wrap(&policy, Path::new("/bin/sh"), &args).expect("wrapped");
        assert_eq!(program, PathBuf::from("/usr/bin/sandbox-exec"));
        assert!(program.is_absolute());
        let expected: Vec<OsString> = vec![
            "-p".into(),
            text(&policy).into(),
            "--".into(),
            "/bin/sh".into(),
            "-c".into(),
            "cargo test".into(),
        ];
        assert_eq!(argv, expected);
    }

    #[test]
    fn wrap_refuses_what_the_profile_refuses() {
        let mut policy = policy();
        policy.writable.push(PathBuf::from("/w/a\rb"));
        let error = wrap(&policy, Path::new("/bin/sh"), &[]).expect_err("refused");
        assert!(error.starts_with("cannot confine the command"), "{error}");
    }
}
