//! `render`: every file the install would write, into a directory.

use crate::cli::RenderArgs;
use crate::context::Context;
use crate::files;
use crate::render::{HostFacts, OsBuild};

/// `render`'s document: each file written (or, with `--dry-run`, that would be) with its
/// hash, and the adapter the External network binds.
#[derive(serde::Serialize)]
pub(crate) struct Rendered<'a> {
    pub files: &'a [RenderedFile],
    pub uplink: &'a crate::host::uplink::Choice,
}

/// One file `render` wrote.
#[derive(serde::Serialize)]
pub(crate) struct RenderedFile {
    pub path: String,
    pub sha256: String,
}

pub fn run(args: &RenderArgs, ctx: &mut Context) -> anyhow::Result<()> {
    // The host gives its defaults (node name, runtime, CNI dirs) and its Windows build.
    let host = ctx.open_host(crate::host::select::Intent::Read)?;
    let loaded = ctx.load_config()?;
    let config = &loaded.config;
    let os_build = match (args.os_build, host.system_facts()) {
        (Some(b), _) => b,
        (None, Ok(f)) => {
            let b = OsBuild {
                build: f.build,
                ubr: f.ubr.unwrap_or(0),
            };
            ctx.printer.detail(&format!(
                "Windows build {b} from the host (pass --os-build for another)"
            ));
            b
        }
        (None, Err(e)) => {
            ctx.printer.warn(&format!(
                "cannot read the host's Windows build ({e}): assuming {} (Windows Server 2022); pass --os-build for another",
                OsBuild::SERVER_2022
            ));
            OsBuild::SERVER_2022
        }
    };
    // The adapter from the host alone: render reads no cluster, so the Node's InternalIP
    // is not among the node IP's sources here (install reads it).
    let uplink = crate::plan::desired::choose_uplink(host.as_ref(), config, None)?;
    ctx.printer.detail(&uplink.describe());
    let facts = HostFacts {
        os_build,
        aks: crate::plan::desired::on_aks(host.as_ref(), config)?,
        calico_version: args.calico_version.clone(),
        release_cni_version: None,
        uplink: uplink.adapter.clone(),
        // render reads no cluster: the pin a datastore migration needs is install's and
        // reconfigure's to add.
        calico_api_group: None,
    };

    // Render everything before writing anything.
    let rendered = crate::plan::desired::render_files(config, &facts)?;

    if !ctx.options.dry_run {
        fs_err::create_dir_all(&args.output_dir)?;
    }
    let mut listed = Vec::new();
    for file in &rendered {
        let path = args.output_dir.join(&file.name);
        let bytes = file.contents.as_bytes();
        let changed = if ctx.options.dry_run {
            !files::unchanged(&path, bytes)
        } else {
            files::write_atomic(&path, bytes)?
        };
        let verb = match (ctx.options.dry_run, changed) {
            (true, true) => "would write",
            (true, false) | (false, false) => "unchanged",
            (false, true) => "wrote",
        };
        ctx.log(&format!("{verb} {}", path.display()));
        ctx.printer.text(&path.display().to_string());
        listed.push(RenderedFile {
            path: path.display().to_string(),
            sha256: files::sha256_hex(bytes),
        });
    }
    ctx.printer.json(&Rendered {
        files: &listed,
        uplink: &uplink,
    });
    Ok(())
}
