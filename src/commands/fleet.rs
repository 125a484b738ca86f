//! `fleet plan`: the manifests that let system-upgrade-controller or a DaemonSet roll
//! calicoctl-win over the Windows nodes, with the config every node gets.

use crate::cli::{Engine, FleetPlanArgs, FleetRbacArgs, MigrateDirection};
use crate::context::Context;
use crate::error::UsageError;
use crate::fleet::manifests::{Fleet, Migration, VerifyJob};
use crate::k8s_name;
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::time::Duration;

pub fn plan(args: &FleetPlanArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let fleet = fleet(args, ctx)?;
    dns_label("--calico-namespace", &args.calico_namespace)?;
    dns_label("--operator-namespace", &args.operator_namespace)?;
    let group = calico_api(ctx, args.calico_api)?;
    let rights = match fleet.migrate {
        Some(_) => crate::fleet::rights::migrate(),
        None => crate::fleet::rights::FLEET.to_vec(),
    };
    let mut docs = crate::fleet::rights::manifests(
        &crate::cluster::rights::in_group(&rights, group),
        (&fleet.service_account, &args.namespace),
        &args.calico_namespace,
        &args.operator_namespace,
    );
    if let Some(m) = &fleet.migrate {
        ctx.printer.note(&format!(
            "the Plan moves one Windows node at a time ({}); its account {} may patch the Installation and install: delete the manifests once every node has moved",
            m.direction(),
            fleet.service_account
        ));
    } else {
        docs.extend(crate::fleet::rights::token_policy(
            &fleet.service_account,
            &args.namespace,
        ));
        docs.extend(crate::fleet::rights::calico_node_token_policy(
            &args.calico_namespace,
        ));
        ctx.printer.note(crate::fleet::rights::TOKEN_POLICY_NEEDS);
    }
    if fleet.verify.is_some() || fleet.verify_every.is_some() {
        docs.extend(verify_roles(&fleet, &args.namespace));
    }
    docs.push(serde_json::to_value(fleet.secret())?);
    if fleet.migrate.is_some()
        || matches!(args.engine, Engine::SystemUpgradeController | Engine::Both)
    {
        docs.push(serde_json::to_value(fleet.plan())?);
    }
    if fleet.migrate.is_none() && matches!(args.engine, Engine::Daemonset | Engine::Both) {
        // Beside a Plan the DaemonSet changes nothing: two engines would change twice
        // `--concurrency` at once (the controller cordons before its job, sharing no turns).
        let changes = args.engine == Engine::Daemonset;
        if changes {
            docs.extend(crate::fleet::rights::turn_role(
                &fleet.service_account,
                &args.namespace,
                &fleet.name,
                fleet.concurrency,
            ));
        }
        docs.push(serde_json::to_value(fleet.daemon_set(changes))?);
    }
    if args.metrics_service {
        docs.push(serde_json::to_value(metrics_service(args, &fleet)?)?);
    }
    print_manifests(ctx, &docs, args.out_file.as_deref())
}

/// `--metrics-service`: the Service over the DaemonSet's pods, with the config's ports.
fn metrics_service(
    args: &FleetPlanArgs,
    fleet: &Fleet,
) -> anyhow::Result<k8s_openapi::api::core::v1::Service> {
    if args.engine == Engine::SystemUpgradeController {
        return Err(UsageError::new(
            "--metrics-service selects the DaemonSet's pods, which --engine system-upgrade-controller does not write",
            "leave out --engine (both), or pass --engine daemonset",
        )
        .into());
    }
    let m = crate::config::metrics_of_file(&fleet.config)?;
    if !m.enabled {
        return Err(UsageError::new(
            "--metrics-service: the config the nodes get does not turn metrics on",
            "set metrics.enabled: true and metrics.source_ranges (the addresses scrapes arrive from: the nodes' subnet under Calico's default natOutgoing) in the config file",
        )
        .into());
    }
    Ok(fleet.metrics_service([m.port.0, m.felix_port.0]))
}

/// `--verify`: verify's namespace and roles bound to the jobs' account (`<account>-verify`),
/// and the admission policy holding its pods there to the jobs' image.
fn verify_roles(fleet: &Fleet, namespace: &str) -> Vec<serde_json::Value> {
    let sa = &fleet.service_account;
    let mut docs = vec![crate::cluster::verify_rights::namespace()];
    let name = format!("{sa}-verify");
    docs.extend(crate::cluster::verify_rights::bindings(
        &name, namespace, sa,
    ));
    // The jobs run verify with `--verify-image`, else its default image.
    let images = [fleet
        .verify_image
        .clone()
        .unwrap_or_else(|| crate::verify::image::AGNHOST.to_owned())];
    docs.extend(crate::cluster::verify_rights::admission(
        &name, namespace, sa, &images,
    ));
    docs
}

/// `--migrate`'s Plan: one node at a time, by system-upgrade-controller, the release flags for
/// `from-operator` only and each as `cmd.exe` passes it on.
fn migration(args: &FleetPlanArgs) -> anyhow::Result<Option<Migration>> {
    let release = [
        ("--release-zip", args.release_zip.as_deref()),
        ("--sha256", args.sha256.as_deref()),
        ("--calico-version", args.calico_version.as_deref()),
    ];
    let Some(direction) = args.migrate else {
        if let Some((flag, _)) = release.iter().find(|(_, v)| v.is_some()) {
            return Err(UsageError::new(
                format!("{flag} is for a migration's install"),
                "pass it with --migrate from-operator, or leave it out",
            )
            .into());
        }
        return Ok(None);
    };
    if args.engine == Engine::Daemonset {
        return Err(UsageError::new(
            "a migration is rolled by system-upgrade-controller's Plan, not a DaemonSet (its pod would stay on a node the operator has taken)",
            "leave out --engine, or pass --engine system-upgrade-controller",
        )
        .into());
    }
    if let Some(n) = args.concurrency.filter(|n| *n != 1) {
        return Err(UsageError::new(
            format!("--concurrency {n}: a migration moves one node at a time"),
            "leave out --concurrency (a migration's is 1)",
        )
        .into());
    }
    let to_operator = direction == MigrateDirection::ToOperator;
    let mut flags = Vec::new();
    for (flag, value) in release {
        let Some(value) = value else { continue };
        if to_operator {
            return Err(UsageError::new(
                format!("{flag} is for from-operator's install; to-operator installs nothing"),
                format!("leave out {flag}"),
            )
            .into());
        }
        if !is_command_line_safe(value) {
            return Err(UsageError::new(
                format!(
                    "{flag} {:?} has a character cmd.exe would read in the job's command line",
                    crate::redact::shown(value)
                ),
                "give a value without spaces, quotes or any of & | < > ^ % ! (host the zip at a URL without them)",
            )
            .into());
        }
        flags.push(format!("{flag}={value}"));
    }
    // What each node's install would refuse, refused before a node leaves the operator.
    if let Some(v) = &args.calico_version {
        super::flags::calico_version(v, "each node installs the cluster's")?;
    }
    if let Some(sha) = &args.sha256 {
        super::flags::sha256(sha)?;
    }
    if let Some(zip) = &args.release_zip
        && !is_zip_for_every_node(zip)
    {
        return Err(UsageError::new(
            format!(
                "--release-zip {:?} is neither an https:// URL nor an absolute path, which every node could read",
                crate::redact::shown(zip)
            ),
            "give the zip's https:// URL (with --sha256), or its absolute path where every node has it (C:\\...)",
        )
        .into());
    }
    Ok(Some(Migration {
        to_operator,
        pod_timeout: args.pod_timeout,
        release: flags,
    }))
}

/// Whether every node can read `zip`: an https:// URL, or an absolute path.
fn is_zip_for_every_node(zip: &str) -> bool {
    let b = zip.as_bytes();
    zip.starts_with("https://")
        || zip.starts_with('/')
        || (b.len() > 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\')
}

/// Whether `cmd.exe /c` passes a value on as it is: no whitespace, quotes, or its operators
/// and expansions (`& | < > ^ ( )`, `%`, and `!` under delayed expansion).
fn is_command_line_safe(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 2048
        && value
            .chars()
            .all(|c| c.is_ascii_graphic() && !"&|<>^%!\"()".contains(c))
}

/// `fleet rbac`: an identity's ServiceAccount and its roles (`cluster::rights` for the
/// installer and the fleet), names checked before the cluster is read.
pub fn rbac(args: &FleetRbacArgs, ctx: &mut Context) -> anyhow::Result<()> {
    use crate::cli::RbacIdentity;
    if args.identity != RbacIdentity::Verify && !args.verify_image.is_empty() {
        return Err(UsageError::new(
            "--verify-image names the images verify's account may run",
            "pass it with --identity verify, or leave it out",
        )
        .into());
    }
    let (name, namespace) = match args.identity {
        RbacIdentity::Installer => ("calicoctl-win-installer", "kube-system"),
        RbacIdentity::Fleet => ("calicoctl-win-fleet", "system-upgrade"),
        RbacIdentity::Verify => ("calicoctl-win-verify", "kube-system"),
        RbacIdentity::Diags => ("calicoctl-win-diags", "system-upgrade"),
    };
    let name = args.name.as_deref().unwrap_or(name);
    let namespace = args.namespace.as_deref().unwrap_or(namespace);
    dns_label("--name", name)?;
    dns_label("--namespace", namespace)?;
    if args.identity == RbacIdentity::Verify {
        return rbac_verify(args, ctx, (name, namespace));
    }
    dns_label("--calico-namespace", &args.calico_namespace)?;
    if args.identity == RbacIdentity::Diags {
        // `fleet diags`' least roles (`fleet::diags::rights`).
        let docs = crate::fleet::diags::rights::manifests(
            name,
            (namespace, namespace),
            &args.calico_namespace,
        );
        return print_manifests(ctx, &docs, args.out_file.as_deref());
    }
    let rights = if args.identity == RbacIdentity::Installer {
        crate::cluster::rights::installer(args.datastore == crate::cli::RbacDatastore::Etcdv3)
    } else {
        crate::fleet::rights::FLEET.to_vec()
    };
    let rights = crate::cluster::rights::in_group(&rights, calico_api(ctx, args.calico_api)?);
    // None reads in the operator's namespace (migrate's roles are `fleet plan --migrate`'s).
    let operator = crate::fleet::rights::OPERATOR_NAMESPACE;
    let mut docs = crate::fleet::rights::manifests(
        &rights,
        (name, namespace),
        &args.calico_namespace,
        operator,
    );
    if args.identity == RbacIdentity::Fleet {
        docs.extend(crate::fleet::rights::token_policy(name, namespace));
    }
    // Every identity that installs makes nodes' renewal grants to calico-node's account.
    docs.extend(crate::fleet::rights::calico_node_token_policy(
        &args.calico_namespace,
    ));
    // No turn Role: `fleet plan` writes one for its `--concurrency`; one here for the
    // default, applied after, would take the later slots' rights away.
    ctx.printer.note(crate::fleet::rights::TOKEN_POLICY_NEEDS);
    print_manifests(ctx, &docs, args.out_file.as_deref())
}

/// `fleet rbac --identity verify`: `cluster::verify_rights` and the admission policy.
fn rbac_verify(
    args: &FleetRbacArgs,
    ctx: &mut Context,
    (name, namespace): (&str, &str),
) -> anyhow::Result<()> {
    // Checked by `image_flag` while parsing: none of its characters ends the policy's quoted CEL.
    let images = match args.verify_image.as_slice() {
        [] => vec![crate::verify::image::AGNHOST.to_owned()],
        given => given.to_vec(),
    };
    let mut docs = crate::cluster::verify_rights::manifests(name, namespace);
    docs.extend(crate::cluster::verify_rights::admission(
        name, namespace, name, &images,
    ));
    print_manifests(ctx, &docs, args.out_file.as_deref())
}

/// The group of Calico's resources the roles name: asked, else the cluster's, else v1 (said).
fn calico_api(
    ctx: &mut Context,
    asked: crate::cli::CalicoApi,
) -> anyhow::Result<crate::cluster::calico_api::Group> {
    use crate::cli::CalicoApi;
    use crate::cluster::calico_api::Group;
    Ok(match asked {
        CalicoApi::V1 => Group::V1,
        CalicoApi::V3 => Group::V3,
        CalicoApi::Auto => match ctx.connect_cluster()? {
            Some(c) => c.calico_group()?,
            None => {
                ctx.printer.note(
                    "no admin kubeconfig: the roles name Calico's resources in crd.projectcalico.org (--calico-api v3 for a cluster that serves projectcalico.org/v3 as CRDs)",
                );
                Group::V1
            }
        },
    })
}

/// `fleet plan`'s document (`out_file` `null`: standard output).
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct FleetPlan<'a> {
    pub out_file: Option<String>,
    pub manifests: &'a [serde_json::Value],
}

/// Manifests as YAML for `kubectl apply -f -` (or into `out_file`), or one JSON document.
fn print_manifests(
    ctx: &mut Context,
    docs: &[serde_json::Value],
    out_file: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let yaml = docs
        .iter()
        .map(serde_saphyr::to_string)
        .collect::<Result<Vec<_>, _>>()
        .context("cannot write the manifests as YAML")?
        .join("---\n");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    // `--out-file -` is standard output, where the manifests go without the flag.
    let out_file = out_file.filter(|p| !crate::files::is_stdout(p));
    match out_file {
        // A dry run refuses the file the real run refuses, and shows what it would write.
        Some(path) if ctx.options.dry_run => {
            crate::files::check_target(path)?;
            ctx.printer.text(yaml.trim_end());
            ctx.printer.note(&format!(
                "--dry-run: {} not written ({})",
                path.display(),
                kinds.join(", ")
            ));
        }
        Some(path) => {
            let changed = crate::files::write_atomic(path, yaml.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            ctx.printer.text(&format!(
                "{} {} ({}); apply with: kubectl apply -f {}",
                if changed { "wrote" } else { "unchanged" },
                path.display(),
                kinds.join(", "),
                path.display()
            ));
        }
        None => ctx.printer.text(yaml.trim_end()),
    }
    ctx.printer.json(&FleetPlan {
        out_file: out_file.map(|p| p.display().to_string()),
        manifests: docs,
    });
    Ok(())
}

/// What the manifests are made from: the flags, checked, and the config file, which must load.
fn fleet(args: &FleetPlanArgs, ctx: &Context) -> anyhow::Result<Fleet> {
    if let Some(set) = ctx.options.sets.first() {
        return Err(UsageError::new(
            format!("--set {set}: the nodes get the config file, not this command line"),
            "put the setting in the config file given with --config",
        )
        .into());
    }
    let Some(path) = ctx.options.config.as_deref() else {
        return Err(UsageError::new(
            "fleet plan needs the config file every node gets",
            "pass --config FILE (a calico-windows.yaml; 'config import-ps1' converts a config.ps1)",
        )
        .into());
    };
    let (path, config) = crate::config::read_file(Some(path))?
        .with_context(|| format!("cannot read {}", path.display()))?;
    let problems = crate::config::problems_of_file(path.clone(), &config)?;
    if !problems.is_empty() {
        return Err(crate::config::ConfigError::Invalid {
            file: Some(path),
            problems,
        }
        .into());
    }
    let per_node = crate::config::per_node_settings(path.clone(), &config)?;
    if !per_node.is_empty() {
        return Err(UsageError::new(
            format!(
                "{} sets what differs from node to node, and every node of the fleet gets this file: {}",
                path.display(),
                per_node.join(", ")
            ),
            "remove those settings from the file: each node finds its own name (the host name, as kubelet's) and address",
        )
        .into());
    }
    let (name, service_account, config_secret) = names(args);
    for (what, value) in [
        ("--name", &name),
        ("--namespace", &args.namespace),
        ("--service-account", &service_account),
        ("--config-secret", &config_secret),
    ] {
        dns_label(what, value)?;
    }
    let version = args
        .version
        .clone()
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
    if !is_image_tag(&version) {
        return Err(UsageError::new(
            format!("--version {version:?} is not an image tag"),
            "use at most 128 letters, digits, '_', '.' and '-', starting with a letter, digit or '_' (like 1.2.0)",
        )
        .into());
    }
    let migrate = migration(args)?;
    let concurrency = concurrency(args, migrate.is_some());
    Ok(Fleet {
        name,
        namespace: args.namespace.clone(),
        image: tagged_image(&args.image, &version)?,
        version,
        service_account,
        config_secret,
        config,
        concurrency,
        node_selector: node_selector(&args.node_selector)?,
        drain_timeout: args.drain_timeout,
        force: args.force,
        delete_emptydir_data: args.delete_emptydir_data,
        migrate,
        verify: args.verify.then_some(VERIFY_JOB),
        verify_every: args.verify_every,
        verify_image: verify_image(args)?,
        log_containers: args.log_containers,
    })
}

/// `--verify-image`: only with a verify to run it (clap's `requires` names one flag).
fn verify_image(args: &FleetPlanArgs) -> Result<Option<String>, UsageError> {
    if args.verify_image.is_some() && !args.verify && args.verify_every.is_none() {
        return Err(UsageError::new(
            "--verify-image without --verify or --verify-every: no verify runs to use it",
            "add --verify or --verify-every, or leave out --verify-image",
        ));
    }
    Ok(args.verify_image.clone())
}

/// Nodes changed at once: as given, else 2 (1 for a migration or with `--verify`).
fn concurrency(args: &FleetPlanArgs, migrating: bool) -> u32 {
    args.concurrency
        .unwrap_or(if migrating || args.verify { 1 } else { 2 })
}

/// The Plan's `verify` bounds: verify's defaults, and reconfigure's (`--wait-timeout` 5m, and
/// `--service-timeout` 1m for each stop and start of four services).
pub(crate) const VERIFY_JOB: VerifyJob = VerifyJob {
    timeout: Duration::from_secs(120),
    pull_timeout: crate::verify::options::PULL_TIMEOUT,
    reconfigure: Duration::from_secs(5 * 60 + 8 * 60),
};

/// The Plan's name, the jobs' account and the config's Secret: as given, else a migration's
/// own, replacing none of the reconfigure Plan's (a Plan's jobs run again when a Secret it
/// mounts changes: system-upgrade-controller v0.19 `pkg/upgrade/plan/plan.go` `DigestStatus`).
fn names(args: &FleetPlanArgs) -> (String, String, String) {
    let (name, service_account, secret) = match args.migrate {
        None => (
            "calicoctl-win",
            "calicoctl-win-fleet",
            "calicoctl-win-config",
        ),
        Some(MigrateDirection::ToOperator) => (
            "calicoctl-win-to-operator",
            "calicoctl-win-migrate",
            MIGRATE_CONFIG_SECRET,
        ),
        Some(MigrateDirection::FromOperator) => (
            "calicoctl-win-from-operator",
            "calicoctl-win-migrate",
            MIGRATE_CONFIG_SECRET,
        ),
    };
    let or =
        |given: &Option<String>, default: &str| given.clone().unwrap_or_else(|| default.to_owned());
    (
        or(&args.name, name),
        or(&args.service_account, service_account),
        or(&args.config_secret, secret),
    )
}

/// The migration Plan's config Secret: never the reconfigure Plan's (it would run again).
pub(crate) const MIGRATE_CONFIG_SECRET: &str = "calicoctl-win-migrate-config";

/// An image tag, as the distribution reference grammar has it: `[\w][\w.-]{0,127}`.
fn is_image_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// The Plan's and DaemonSet's image: `image` with a tag or digest, else `image:version`, as
/// system-upgrade-controller tags a name-only one (v0.19 `pkg/upgrade/container/container.go`,
/// `WithLatestTag`) where a DaemonSet would run `:latest`. A tag is a `:` after the last `/`.
fn tagged_image(image: &str, version: &str) -> anyhow::Result<String> {
    crate::verify::options::image_flag(image).map_err(|e| {
        UsageError::new(
            format!("--image {e}"),
            "name the image that holds calicoctl-win.exe, like registry.example.com/calicoctl-win:1.2.0",
        )
    })?;
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') || last.contains(':') {
        return Ok(image.to_owned());
    }
    Ok(format!("{image}:{version}"))
}

/// A Kubernetes object name (RFC 1123 label).
fn dns_label(what: &str, value: &str) -> anyhow::Result<()> {
    if crate::k8s_name::is_label(value) {
        return Ok(());
    }
    Err(UsageError::new(
        format!("{what} {value:?} is not a Kubernetes name"),
        "use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit",
    )
    .into())
}

/// `--node-selector KEY=VALUE` flags as labels.
fn node_selector(flags: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    flags
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k, v)) if k8s_name::is_qualified_name(k) && k8s_name::is_label_value(v) => {
                Ok((k.to_owned(), v.to_owned()))
            }
            _ => Err(UsageError::new(
                format!("--node-selector {f:?} is not a node label KEY=VALUE"),
                "give a node label, like --node-selector node.kubernetes.io/windows-build=10.0.20348",
            )
            .into()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    /// The Plan's deadline counts reconfigure's and verify's waits at their flags' defaults.
    #[test]
    fn the_verify_jobs_bounds_are_the_flags_defaults() {
        use crate::cli::{Cli, Command};
        let parse = |argv: &[&str]| Cli::try_parse_from(argv).expect("parses").command;
        let Command::Reconfigure(r) = parse(&["calicoctl-win", "reconfigure"]) else {
            panic!("reconfigure")
        };
        assert_eq!(
            r.wait_timeout + 8 * r.service_timeout,
            super::VERIFY_JOB.reconfigure
        );
        let Command::Verify(v) = parse(&["calicoctl-win", "verify"]) else {
            panic!("verify")
        };
        assert_eq!(v.timeout, super::VERIFY_JOB.timeout);
        assert_eq!(v.pull_timeout, super::VERIFY_JOB.pull_timeout);
    }
}
