//! Cases on the network: the endpoint hanging up or going away mid-turn, a redirect to
//! another host (which must not be followed), and a command's connections: TCP and UDP to
//! 127.0.0.1, a unix socket, and a socket metron itself inherited.

use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use serde_json::json;

use super::sandbox::*;
use super::*;
use crate::suite::common::{GREET_HOLA, Live, PATIENCE, greet_patch};
use crate::suite::fake_ollama::{Chunk, FakeOllama, Reply, answer, call, text, tool_calls};

cases! {
    "endpoint hangs up after a tool ran" => endpoint_hangs_up_after_a_tool_ran: endpoint_disappears_after_a_tool_ran;
    "endpoint hangs up mid tool call" => endpoint_hangs_up_mid_tool_call: endpoint_disappears_mid_tool_call;
    "endpoint server gone mid-turn" => endpoint_gone_mid_turn: endpoint_server_dropped_mid_turn;
    "redirect 307 with remote_endpoint refuse" => redirect_307_when_remote_endpoints_are_refused: redirect_307_with_remote_refused;
    "redirect 308 by default" => redirect_308_with_the_default_settings: redirect_308_by_default;
    "sandbox: TCP to 127.0.0.1" => tcp_from_a_command_to_a_local_listener: tcp_to_a_local_listener;
    "sandbox: UDP to 127.0.0.1" => udp_from_a_command_to_a_local_socket: udp_to_a_local_socket;
    "sandbox: a unix socket" => unix_socket_from_a_command: unix_socket_to_a_local_daemon;
    "sandbox: a socket metron inherited" => a_socket_metron_inherited_stays_with_metron: an_inherited_socket_does_not_reach_the_command;
}

/// The endpoint hangs up mid-reply after a tool already ran: the approved patch
///      stays, nothing else is written, exit 1.
pub(super) fn endpoint_disappears_after_a_tool_ran() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        Reply::Stream(vec![text("I changed greet"), Chunk::Drop]),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "make Greet return hola", &["--yes"]));
        let expect = Expect::nothing().change("greet.go", Want::bytes(GREET_HOLA));
        (expect, Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 2, "{run:?}");
    Verdict::Measured(m)
}

/// The endpoint hangs up after streaming a tool call but before the reply is done:
///      a call from a reply that never finished is not run, even with `--yes`.
pub(super) fn endpoint_disappears_mid_tool_call() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![Reply::Stream(vec![
        tool_calls(&[("apply_patch", json!({"diff": greet_patch()}))]),
        Chunk::Drop,
    ])]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "make Greet return hola", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 1, "{run:?}");
    Verdict::Measured(m)
}

/// The server goes away entirely (dropped) while metron waits for the next reply
///      after a tool ran.
pub(super) fn endpoint_server_dropped_mid_turn() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        Reply::Delayed(PATIENCE, Box::new(answer("too late", 1, 1))),
    ]);
    let mut run = None;
    let mut fake = Some(fake);
    let m = measure(&fx, || {
        let server = fake.as_ref().expect("server");
        let (mut command, _home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "make Greet return hola", "--yes"])
            .env("OLLAMA_HOST", server.base_url());
        let live = Live::start(command, _home);
        let deadline = Instant::now() + PATIENCE;
        while server.chat_bodies().len() < 2 {
            assert!(Instant::now() < deadline, "no second request");
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(fake.take());
        run = Some(live.finish());
        let expect = Expect::nothing().change("greet.go", Want::bytes(GREET_HOLA));
        (expect, None)
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 1, "{run:?}");
    Verdict::Measured(m)
}

/// The endpoint answers the chat with a redirect to another server: metron does not follow
/// it (which would re-send the chat body, the code the tools read), and says where it
/// pointed.
fn redirected(status: u16, user_config: Option<&str>) -> Verdict {
    let fx = Fixture::new(true);
    if let Some(config) = user_config {
        fx.user_config(config);
    }
    let elsewhere = FakeOllama::start(vec![answer("Followed the redirect.", 10, 2)]);
    let fake = FakeOllama::start(vec![Reply::Redirect(status, elsewhere.chat_url())]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "hi", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&elsewhere.chat_url()), "{run:?}");
    let mut m = m;
    m.left_for(&elsewhere);
    Verdict::Measured(m)
}

/// A 307 while `remote_endpoint` is "refuse".
pub(super) fn redirect_307_with_remote_refused() -> Verdict {
    redirected(307, Some(r#"{"remote_endpoint": "refuse"}"#))
}

/// A 308 with the default settings.
pub(super) fn redirect_308_by_default() -> Verdict {
    redirected(308, None)
}

/// TCP: a connection to a listener on 127.0.0.1 is refused, and the listener sees
///      nothing.
pub(super) fn tcp_to_a_local_listener() -> Verdict {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind tcp");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let body = format!(
        "        attempt('tcp connect', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=3).send(b'leak'))\n"
    );
    let (mut m, _) = probe_case(&body, &["tcp connect"], Expect::nothing());
    assert_not_reached(&mut m, "TCP", listener.accept().is_ok());
    Verdict::Measured(m)
}

/// UDP: a datagram to a socket on 127.0.0.1 is refused, and nothing arrives.
pub(super) fn udp_to_a_local_socket() -> Verdict {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    socket.set_nonblocking(true).expect("nonblocking");
    let port = socket.local_addr().expect("addr").port();
    let body = format!(
        "        attempt('udp send', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'leak', ('127.0.0.1', {port})))\n"
    );
    let (mut m, _) = probe_case(&body, &["udp send"], Expect::nothing());
    let mut buf = [0u8; 16];
    assert_not_reached(&mut m, "UDP", socket.recv_from(&mut buf).is_ok());
    Verdict::Measured(m)
}

/// A unix socket outside the project (a local daemon's) cannot be connected to.
pub(super) fn unix_socket_to_a_local_daemon() -> Verdict {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("daemon.sock");
    let listener = UnixListener::bind(&path).expect("bind unix socket");
    listener.set_nonblocking(true).expect("nonblocking");
    let body = format!(
        "        attempt('unix connect', lambda: socket.socket(socket.AF_UNIX).connect('{}'))\n        attempt('abstract unix socket', lambda: socket.socket(socket.AF_UNIX).connect('\\0metron-eval'))\n",
        path.display()
    );
    let (mut m, _) = probe_case(
        &body,
        &["unix connect", "abstract unix socket"],
        Expect::nothing(),
    );
    assert_not_reached(&mut m, "unix", listener.accept().is_ok());
    Verdict::Measured(m)
}

/// A socket metron inherited from its own parent (here a TCP connection to a
///      listener on 127.0.0.1, without close-on-exec) does not reach the command.
pub(super) fn an_inherited_socket_does_not_reach_the_command() -> Verdict {
    use std::os::fd::AsRawFd;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind tcp");
    let addr = listener.local_addr().expect("addr");
    let stream = std::net::TcpStream::connect(addr).expect("connect");
    let (mut accepted, _) = listener.accept().expect("accept");
    accepted.set_nonblocking(true).expect("nonblocking");
    let fd = stream.as_raw_fd();
    // SAFETY: clears close-on-exec on a descriptor this test owns, so metron inherits it.
    unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
    let body = format!(
        "        attempt('write the inherited socket', lambda: os.write({fd}, b'leak'))
"
    );
    let (mut m, _) = probe_case(&body, &["write the inherited socket"], Expect::nothing());
    let mut buf = [0u8; 16];
    let got = std::io::Read::read(&mut accepted, &mut buf).is_ok_and(|n| n > 0);
    assert_not_reached(&mut m, "inherited TCP", got);
    drop(stream);
    Verdict::Measured(m)
}
