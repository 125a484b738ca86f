//! `diags`: one zip for a support case: what `config show`, `status` and `preflight` answer
//! (`commands.rs`), what the host holds (`host.rs`) and the versions (`versions.rs`), every
//! member redacted ([`crate::redact`]); nothing on the host changes.

mod bundle;
mod commands;
mod host;
mod versions;

use crate::cli::DiagsArgs;
use crate::commands::common::DEFAULT_ROOT;
use crate::context::Context;
use crate::host::select::Intent;
use crate::installed::record;
use crate::layout::InstallRoot;
use crate::redact::Redactor;
use bundle::{Bundle, pretty};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `diags`' document.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Diags<'a> {
    pub path: String,
    pub files: &'a [&'a str],
    pub problems: &'a [String],
}

/// The zip's `diags.json`: what made it, the root, its files and what could not be collected.
#[derive(serde::Serialize)]
struct Index<'a> {
    tool: &'static str,
    install_root: &'a str,
    files: Vec<&'a str>,
    problems: &'a [String],
    redacted: &'static str,
}

pub fn run(args: &DiagsArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host(Intent::Read)?;
    let config = ctx.load_config().map(|l| l.config);
    let node = config.as_ref().ok().map(|c| c.node.name.clone());
    let out = args
        .out_file
        .clone()
        .unwrap_or_else(|| default_name(node.as_ref()));
    let root = config.as_ref().map_or_else(
        |_| InstallRoot::new(DEFAULT_ROOT),
        crate::config::Config::root,
    );
    let mut b = Bundle::default();
    if let Err(e) = &config {
        b.problems.push(format!("configuration: {e:#}"));
    }
    let rec = record::read(host.as_ref(), &root);
    let rec = match rec {
        Ok(r) => r,
        Err(e) => {
            b.problems.push(format!("install record: {e}"));
            None
        }
    };
    let h = host.as_ref();

    commands::run_each(args, ctx, &mut b);
    host::sections(h, rec.as_ref(), &mut b);
    host::install_files(h, &root, &mut b);
    if let Some(rec) = &rec {
        host::logs(h, &rec.logs_dir, args.log_tail_bytes, &mut b);
    }
    let versions = versions::versions(h, rec.as_ref(), ctx, node.as_ref(), args.offline);
    b.section("versions.json", versions);
    let index = Index {
        tool: "calicoctl-win diags",
        install_root: root.as_str(),
        files: b.members.iter().map(|(n, _)| n.as_str()).collect(),
        problems: &b.problems,
        redacted: "tokens, keys and passwords are replaced by <redacted>; a private key by one <redacted> per line, so each file keeps its lines",
    };
    let index = pretty(&index);
    b.members.push(("diags.json".to_owned(), index));

    let redactor = record::redactor(h, rec.as_ref());
    write_zip(&out, &b, &redactor)?;
    let files: Vec<&str> = b.members.iter().map(|(n, _)| n.as_str()).collect();
    ctx.printer.text(&format!(
        "Wrote {} ({} files; tokens and keys redacted).",
        out.display(),
        files.len()
    ));
    // The problems go out beside the zip too: redacted as its members are.
    let problems: Vec<String> = b
        .problems
        .iter()
        .map(|p| String::from_utf8_lossy(&redactor.redact(p.as_bytes())).into_owned())
        .collect();
    for p in &problems {
        ctx.printer.warn(&format!("not collected: {p}"));
    }
    // An unreadable configuration is still bad input (exit 2), once the zip is written.
    if let Err(e) = config {
        return Err(anyhow::Error::from(e).context(format!(
            "{} was written without the configuration, which cannot be read",
            out.display()
        )));
    }
    ctx.printer.json(&Diags {
        path: out.display().to_string(),
        files: &files,
        problems: &problems,
    });
    Ok(())
}

/// `calicoctl-win-diags-<node>-<UTC time>.zip` in the current directory.
fn default_name(node: Option<&crate::k8s_name::NodeName>) -> PathBuf {
    let node: String = node
        .map_or("node", crate::k8s_name::NodeName::as_str)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    // 2026-11-23T04:05:06Z -> 20261123T040506Z
    let time: String = crate::duration::time_text(crate::duration::now())
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    PathBuf::from(format!("calicoctl-win-diags-{node}-{time}.zip"))
}

/// Writes the members, redacted, into a zip beside `out`, then renames it into place.
fn write_zip(out: &Path, b: &Bundle, redactor: &Redactor) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "diags.zip".into());
    let tmp = out.with_file_name(format!(".{name}.calicoctl-win.tmp"));
    let write = || -> anyhow::Result<()> {
        let file = std::fs::File::create(&tmp)?;
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (member, bytes) in &b.members {
            zip.start_file(member.as_str(), options)?;
            if b.tails.contains(member) {
                zip.write_all(&redactor.redact_tail(bytes))?;
            } else {
                zip.write_all(&redactor.redact(bytes))?;
            }
        }
        zip.finish()?.sync_all()?;
        fs_err::rename(&tmp, out)?;
        Ok(())
    };
    write()
        .inspect_err(|_| {
            let _ = fs_err::remove_file(&tmp);
        })
        .with_context(|| format!("cannot write {}", out.display()))
}
