//! `config show`: the effective configuration and where each value came from.

use crate::cli::ShowArgs;
use crate::cluster::facts;
use crate::config::spec;
use crate::context::Context;
use serde_json::Value;

/// `config show`'s document.
#[derive(serde::Serialize)]
pub(crate) struct ConfigShow<'a> {
    pub config_file: Option<&'a str>,
    pub settings: Settings<'a>,
    pub ip_autodetection: Option<Autodetection<'a>>,
    pub uplink: &'a Uplink,
    pub cluster_kubeconfig: KubeconfigUsed<'a>,
    pub cluster: &'a ClusterShown,
}

/// Each setting by its key, in the order of `spec::SETTINGS`.
#[derive(Default)]
pub(crate) struct Settings<'a>(pub Vec<(&'static str, Setting<'a>)>);

impl serde::Serialize for Settings<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// One setting: its value and source, its default and what it is.
#[derive(serde::Serialize)]
pub(crate) struct Setting<'a> {
    #[serde(flatten)]
    pub shown: &'a crate::config::Shown,
    pub default: String,
    pub description: &'static str,
}

/// The adapter the External network binds, or why none can be chosen.
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(crate) enum Uplink {
    Chosen(crate::host::uplink::Choice),
    /// `adapter` is always `null` here.
    NoneChosen {
        adapter: Option<String>,
        error: String,
        remedy: Option<String>,
    },
}

/// Whether the cluster was read: from which server, or why not.
#[derive(serde::Serialize)]
pub(crate) struct ClusterShown {
    pub read: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ClusterShown {
    fn not_read(reason: impl Into<String>) -> Self {
        let reason = Some(reason.into());
        Self {
            read: false,
            server: None,
            reason,
        }
    }
}

/// calico-node's way of finding the node's address, and the setting that says so.
#[derive(serde::Serialize)]
pub(crate) struct Autodetection<'a> {
    pub method: &'a str,
    pub why: &'a str,
}

/// The admin kubeconfig and where its path came from.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct KubeconfigUsed<'a> {
    pub path: Option<String>,
    pub source: &'a str,
}

pub fn run(args: &ShowArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host(crate::host::select::Intent::Read)?;
    let base = ctx.load_config()?;
    let (kubeconfig, kubeconfig_source) = ctx.cluster_kubeconfig();
    let (loaded, cluster, internal_ip) = with_cluster(args, ctx, base)?;
    let uplink = uplink_shown(host.as_ref(), &loaded.config, internal_ip);
    let file = loaded.file.as_ref().map(|f| f.display().to_string());

    let settings: Vec<(&str, Setting)> = spec::SETTINGS
        .iter()
        .filter_map(|s| {
            let shown = loaded.shown.get(s.key)?;
            let (default, description) = (s.default_text(), s.doc);
            let entry = Setting {
                shown,
                default,
                description,
            };
            Some((s.key, entry))
        })
        .collect();
    let rows: Vec<(&str, String, String)> = (settings.iter())
        .map(|(k, s)| (*k, text_value(&s.shown.value), s.shown.source.to_string()))
        .collect();
    let method = crate::render::env::autodetection_method(&loaded.config);
    ctx.printer.json(&ConfigShow {
        config_file: file.as_deref(),
        settings: Settings(settings),
        ip_autodetection: method
            .as_ref()
            .map(|(method, why)| Autodetection { method, why }),
        uplink: &uplink.1,
        cluster_kubeconfig: KubeconfigUsed {
            path: kubeconfig.as_ref().map(|p| p.display().to_string()),
            source: kubeconfig_source,
        },
        cluster: &cluster,
    });

    let key_w = rows.iter().map(|r| r.0.len()).max().unwrap_or(3).max(3);
    let val_w = rows
        .iter()
        .map(|r| r.1.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 60);
    ctx.printer.text(&format!(
        "config file: {}",
        file.as_deref().unwrap_or("none (built-in defaults)")
    ));
    ctx.printer
        .text(&format!("{:key_w$}  {:val_w$}  SOURCE", "KEY", "VALUE"));
    for (k, v, s) in rows {
        ctx.printer.text(&format!("{k:key_w$}  {v:val_w$}  {s}"));
    }
    if let Some((m, why)) = &method {
        ctx.printer.text(&format!(
            "\ncalico-node finds this node's address by {m} ({why})"
        ));
    }
    ctx.printer.text(&format!("\n{}", uplink.0));
    let kubeconfig = kubeconfig.map_or("none".to_owned(), |p| p.display().to_string());
    ctx.printer.text(&format!(
        "\ncluster access: kubeconfig {kubeconfig} ({kubeconfig_source})"
    ));
    ctx.printer.text(&match (&cluster.server, &cluster.reason) {
        (Some(s), _) => format!("cluster: read from {s}; settings it filled show source 'cluster'"),
        (_, r) => format!("cluster: not read ({})", r.as_deref().unwrap_or("unknown")),
    });
    Ok(())
}

/// The adapter the External network binds and why, or why none can be (never a failure).
fn uplink_shown(
    host: &dyn crate::host::Host,
    config: &crate::config::Config,
    internal_ip: Option<std::net::Ipv4Addr>,
) -> (String, Uplink) {
    match crate::plan::desired::choose_uplink(host, config, internal_ip) {
        Ok(c) => (c.describe(), Uplink::Chosen(c)),
        Err(e) => {
            let remedy = e
                .downcast_ref::<crate::host::uplink::ChoiceError>()
                .map(|c| c.remedy().to_owned());
            let why = format!("{e:#}");
            (
                format!("no adapter can be chosen for the External network: {why}"),
                Uplink::NoneChosen {
                    adapter: None,
                    error: why,
                    remedy,
                },
            )
        }
    }
}

/// A value as one cell of the table.
fn text_value(v: &Value) -> String {
    match v {
        Value::Null => "(unset)".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "(none)".into(),
        Value::Array(items) => items.iter().map(text_value).collect::<Vec<_>>().join(","),
        Value::Object(map) if map.is_empty() => "(none)".into(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", text_value(v)))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// The configuration with what the cluster fills, how it was read, and the Node's InternalIP.
fn with_cluster(
    args: &ShowArgs,
    ctx: &mut Context,
    base: crate::config::Loaded,
) -> anyhow::Result<(
    crate::config::Loaded,
    ClusterShown,
    Option<std::net::Ipv4Addr>,
)> {
    Ok(if args.offline {
        (base, ClusterShown::not_read("--offline"), None)
    } else {
        let node = base.config.node.name.clone();
        let read = ctx.connect_cluster().and_then(|c| {
            c.map(|c| facts::gather(&c, &node, facts::Rights::Skip))
                .transpose()
        });
        match read {
            Ok(Some(f)) => (
                ctx.load_config_with(f.settings())?,
                ClusterShown {
                    read: true,
                    server: Some(f.server),
                    reason: None,
                },
                f.node_internal_ip,
            ),
            Ok(None) => (base, ClusterShown::not_read("no admin kubeconfig"), None),
            Err(e) => {
                let why = crate::error::chain(&e);
                ctx.printer.warn(&format!(
                    "the cluster was not read, so settings it would fill show their defaults: {why}"
                ));
                (base, ClusterShown::not_read(why), None)
            }
        }
    })
}
