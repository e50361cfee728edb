//! PLACEHOLDER: `find_symbol(symbol)` is being written.

use serde::Deserialize;
use serde_json::Value;

use super::{Access, ToolError, ToolSpec, Toolbox, parse_args};

/// The registry entry.
pub static SPEC: ToolSpec = ToolSpec {
    name: "find_symbol",
    description: "Where is a Go or Rust symbol defined? Exact name.",
    parameters: r#"{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}"#,
    access: Access::Read,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    symbol: String,
}

fn run(toolbox: &Toolbox, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args(SPEC.name, args)?;
    find_symbol(toolbox, &args.symbol)
}

/// Looks up definitions of `symbol`.
pub fn find_symbol(toolbox: &Toolbox, symbol: &str) -> Result<String, ToolError> {
    let _ = toolbox
        .symbols
        .lookup(&toolbox.project, symbol, toolbox.budgets.list_max_entries)?;
    Ok(String::new())
}
