//! The commands whose answers a support case reads first (`config show`, `status`,
//! `preflight`), each run here as it runs alone with `-o json`, its document, exit code and
//! stderr captured into the zip.

use super::bundle::Bundle;
use crate::cli::{DiagsArgs, PreflightArgs, ShowArgs, StatusArgs};
use crate::context::Context;
use crate::output::{Format, Printer};
use serde_json::Value;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A command as it ran alone with `-o json` (its stdout as text when not JSON).
#[derive(serde::Serialize)]
struct Ran {
    exit_code: i32,
    document: Value,
    stderr: String,
}

/// A buffer a `Printer` writes into, read back once the command ran.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

/// Runs `command` as it runs alone with `-o json`.
fn captured(ctx: &mut Context, command: impl FnOnce(&mut Context) -> anyhow::Result<()>) -> Ran {
    let (out, err) = (Captured::default(), Captured::default());
    let printer = Printer::new(
        Format::Json,
        Box::new(out.clone()),
        Box::new(err.clone()),
        false,
        0,
    );
    let mine = std::mem::replace(&mut ctx.printer, printer);
    let code = match command(ctx) {
        Ok(()) => 0,
        Err(e) => {
            let e = crate::commands::known_errors::failure(e);
            ctx.printer.error(&e);
            e.exit as i32
        }
    };
    ctx.printer = mine;
    let text = out.text();
    let document = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
    let stderr = err.text();
    Ran {
        exit_code: code,
        document,
        stderr,
    }
}

/// `config-show.json`, `status.json` and `preflight.json`.
pub(super) fn run_each(args: &DiagsArgs, ctx: &mut Context, b: &mut Bundle) {
    let offline = args.offline;
    let show = captured(ctx, |c| {
        crate::commands::config_show::run(&ShowArgs { offline }, c)
    });
    b.json("config-show.json", &show);
    let status = captured(ctx, |c| {
        crate::commands::status::run(
            &StatusArgs {
                offline,
                verify: false,
                grace: crate::installed::endpoints::DEFAULT_GRACE,
            },
            c,
        )
    });
    b.json("status.json", &status);
    let preflight = PreflightArgs {
        skip: Vec::new(),
        allow_known_issue: Vec::new(),
        offline,
        fix: false,
    };
    let checks = captured(ctx, |c| crate::commands::preflight::run(&preflight, c));
    b.json("preflight.json", &checks);
}
