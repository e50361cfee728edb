//! The `metron` binary: parse the command line, run, map the result to an exit code.

fn main() -> std::process::ExitCode {
    metron::cli::main()
}
