//! `config import-ps1`: a legacy config.ps1 into calico-windows.yaml.

use crate::cli::ImportArgs;
use crate::config::{self, import_ps1};
use crate::context::Context;
use crate::error::UsageError;
use crate::files;
use anyhow::Context as _;

/// `config import-ps1`'s document.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Imported<'a> {
    pub output: Option<String>,
    pub written: bool,
    pub yaml: &'a str,
    pub imported: &'a [import_ps1::Imported],
    pub left_default: &'a [import_ps1::Skipped],
    pub not_understood: &'a [import_ps1::Skipped],
    pub problems: &'a [config::Problem],
}

pub fn run(args: &ImportArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let bytes = crate::files::read_capped(&args.file, crate::files::SMALL_FILE_CAP)
        .map_err(|e| UsageError::new(e.to_string(), "pass the path of an existing config.ps1"))?;
    let import = import_ps1::import(&import_ps1::decode(&bytes));
    let name = args
        .file
        .file_name()
        .map_or("config.ps1".into(), |n| n.to_string_lossy().into_owned());
    let yaml = import_ps1::to_yaml(&import, &name);

    // The result must load: what keeps it from loading is shown, to be fixed before use.
    let path = args
        .out_file
        .clone()
        .unwrap_or("calico-windows.yaml".into());
    let problems = config::problems_of_file(path, &yaml)?;

    let written = write(args, ctx, &yaml)?;

    for s in &import.not_understood {
        ctx.printer.warn(&format!(
            "line {} not imported: {} ({})",
            s.line, s.text, s.reason
        ));
    }
    for p in &problems {
        ctx.printer.warn(&format!(
            "the imported configuration does not validate yet: {p}"
        ));
    }
    match &args.out_file {
        Some(out) => ctx.printer.text(&format!(
            "{} {} ({} settings imported, {} left to defaults, {} lines not understood)",
            if written {
                "wrote"
            } else if ctx.options.dry_run {
                "would write"
            } else {
                "unchanged"
            },
            out.display(),
            import.imported.len(),
            import.left_default.len(),
            import.not_understood.len()
        )),
        None => ctx.printer.text(yaml.trim_end()),
    }
    ctx.printer.json(&Imported {
        output: args.out_file.as_ref().map(|p| p.display().to_string()),
        written,
        yaml: &yaml,
        imported: &import.imported,
        left_default: &import.left_default,
        not_understood: &import.not_understood,
        problems: &problems,
    });
    Ok(())
}

/// Writes the YAML to `--out-file` (an existing different file only with `--yes`); whether
/// it was written.
fn write(args: &ImportArgs, ctx: &mut Context, yaml: &str) -> anyhow::Result<bool> {
    let mut written = false;
    if let Some(out) = &args.out_file {
        if out.exists() && !ctx.options.yes && !files::unchanged(out, yaml.as_bytes()) {
            return Err(UsageError::new(
                format!("{} already exists", out.display()),
                "pass --yes to overwrite it, or choose another --out-file",
            )
            .into());
        }
        if ctx.options.dry_run {
            ctx.log(&format!("would write {}", out.display()));
        } else {
            written = files::write_atomic(out, yaml.as_bytes())
                .with_context(|| format!("cannot write {}", out.display()))?;
            ctx.log(&format!("wrote {}", out.display()));
        }
    }
    Ok(written)
}
