//! The operator's Installation as the operator reads it (tigera/operator release-v1.44):
//! `default` with the fields its `overlay` sets in their place, the parts that decide where
//! and how the operator runs Calico on Windows, and the patches `migrate` writes to it.
//!
//! From the operator's source at release-v1.44: an affinity override replaces the provider's
//! whole (`pkg/render/common/components/components.go` `applyDaemonSetOverrides`), so it
//! carries the provider's terms; a `windowsDataplane` other than `HNS` renders nothing
//! (`pkg/controller/installation/windows_controller.go`); `cniVersion` is `spec.cni.specVersion`,
//! `Auto` or unset being 1.0.0 (`api/v1/installation_types.go` `ResolvedSpecVersion`).

use super::{Cluster, ClusterError};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// The node label that keeps the operator's DaemonSet off a node: calicoctl-win runs Calico
/// there. The Installation's affinity says `NotIn [true]`, which a node without it satisfies.
pub const LABEL: &str = "calicoctl-win/runs-calico";
pub const LABEL_VALUE: &str = "true";

/// The label's value on a Node object.
pub fn label_of(n: &k8s_openapi::api::core::v1::Node) -> Option<&str> {
    n.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL))
        .map(String::as_str)
}

/// The `cniVersion` the operator writes for `Auto` or no `specVersion`.
pub const AUTO_CNI_SPEC_VERSION: &str = "1.0.0";

/// The parts of the Installation that decide where and how the operator runs on Windows.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Installation {
    /// `spec.calicoNetwork.windowsDataplane`: `HNS` or `Disabled` (unset is disabled).
    pub windows_dataplane: Option<String>,
    /// `spec.kubernetesProvider` (`AKS`, `EKS`, ...).
    pub provider: Option<String>,
    /// `spec.calicoNodeWindowsDaemonSet.spec.template.spec.affinity`, when overridden.
    pub affinity: Option<Value>,
    /// `spec.cni.specVersion` as written (`Auto`, `0.3.1`, `0.4.0`, `1.0.0`).
    pub cni_spec_version: Option<String>,
    /// `spec.windowsNodes.cniBinDir` and `cniConfigDir` as written.
    pub cni_bin_dir: Option<String>,
    pub cni_config_dir: Option<String>,
    /// The Installation a patch of the DaemonSet's affinity (or `windowsDataplane`) must
    /// change: `overlay` where it sets it, else `default`.
    #[serde(skip)]
    pub affinity_in: &'static str,
    #[serde(skip)]
    pub dataplane_in: &'static str,
    /// Why the `overlay` Installation could not be read (older roles): the facts are then
    /// `default`'s alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlay_unreadable: Option<String>,
    /// What the operator validates before it renders Windows (`operator_readiness`): the
    /// spec's fields, else the ones the operator computed (`status.computed`).
    #[serde(skip)]
    pub windows_inputs: WindowsInputs,
}

/// The parts of the Installation the operator's validation of a Windows install reads
/// (tigera/operator release-v1.44 `pkg/controller/installation/validation.go`), and the
/// address detection its Windows DaemonSet is given (`pkg/render/windows.go`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowsInputs {
    /// `spec.serviceCIDRs`.
    pub service_cidrs: Vec<String>,
    /// `spec.cni.type` (`Calico`, `AmazonVPC`, ...), when set or computed.
    pub cni_type: Option<String>,
    /// The first IPv4 pool of `spec.calicoNetwork.ipPools` (`render.GetIPv4Pool`): its
    /// index in the list, CIDR and encapsulation.
    pub ipv4_pool: Option<(usize, String, String)>,
    /// `spec.calicoNetwork.nodeAddressAutodetectionV4`, when set or computed.
    pub autodetection_v4: Option<Value>,
}

impl WindowsInputs {
    /// `overlay`'s field where set, else `default`'s, else `default`'s `status.computed`.
    fn of(default: &Value, overlay: Option<&Value>) -> Self {
        let pick = |path: &[&str]| {
            overlay
                .and_then(|o| at(&o["spec"], path))
                .or_else(|| at(&default["spec"], path))
                .or_else(|| at(&default["status"]["computed"], path))
        };
        let ipv4_pool = pick(&["calicoNetwork", "ipPools"]).and_then(|pools| {
            pools.as_array()?.iter().enumerate().find_map(|(i, p)| {
                let cidr = p["cidr"].as_str()?;
                let v4 = cidr
                    .split('/')
                    .next()
                    .is_some_and(|a| a.parse::<std::net::Ipv4Addr>().is_ok());
                v4.then(|| {
                    (
                        i,
                        cidr.to_owned(),
                        p["encapsulation"].as_str().unwrap_or_default().to_owned(),
                    )
                })
            })
        });
        Self {
            service_cidrs: pick(&["serviceCIDRs"])
                .and_then(|v| serde_json::from_value(v).ok())
                .unwrap_or_default(),
            cni_type: pick(&["cni", "type"]).and_then(|v| v.as_str().map(str::to_owned)),
            ipv4_pool,
            autodetection_v4: pick(&["calicoNetwork", "nodeAddressAutodetectionV4"]),
        }
    }
}

impl Default for Installation {
    fn default() -> Self {
        Self::of(&Value::Null)
    }
}

/// The operator's Installation, and the one whose fields override it
/// (`utils.OverlayInstanceKey`).
pub const DEFAULT: &str = "default";
pub const OVERLAY: &str = "overlay";

/// Where CNI plugins and their config live on a Windows node, as Windows paths.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CniDirs {
    pub bin: String,
    pub conf: String,
}

impl Installation {
    /// Read from the object's JSON.
    pub fn of(object: &Value) -> Self {
        Self::merged(object, None)
    }

    /// The spec the operator works from: `default`'s, each field `overlay` sets taking its
    /// place (tigera/operator release-v1.44 `pkg/controller/utils/merge.go`
    /// `OverrideInstallationSpec`); the DaemonSet's affinity as a whole.
    pub fn merged(default: &Value, overlay: Option<&Value>) -> Self {
        let pick = |path: &[&str]| -> (Option<Value>, &'static str) {
            match overlay.and_then(|o| at(&o["spec"], path)) {
                Some(v) => (Some(v), OVERLAY),
                None => (at(&default["spec"], path), DEFAULT),
            }
        };
        let text = |path: &[&str]| pick(path).0.and_then(|v| v.as_str().map(str::to_owned));
        let (affinity, affinity_in) = pick(&[
            "calicoNodeWindowsDaemonSet",
            "spec",
            "template",
            "spec",
            "affinity",
        ]);
        let (dataplane, dataplane_in) = pick(&["calicoNetwork", "windowsDataplane"]);
        Self {
            windows_dataplane: dataplane.and_then(|v| v.as_str().map(str::to_owned)),
            provider: text(&["kubernetesProvider"]),
            affinity,
            cni_spec_version: text(&["cni", "specVersion"]),
            cni_bin_dir: text(&["windowsNodes", "cniBinDir"]),
            cni_config_dir: text(&["windowsNodes", "cniConfigDir"]),
            affinity_in,
            dataplane_in,
            overlay_unreadable: None,
            windows_inputs: WindowsInputs::of(default, overlay),
        }
    }

    /// Where the operator's pods put Calico's CNI plugins and its `10-calico.conflist` on a
    /// Windows node: `spec.windowsNodes`, else the provider's defaults (release-v1.44
    /// `pkg/render/windows.go` `DefaultWindowsCNIDirectories`).
    pub fn windows_cni_dirs(&self) -> CniDirs {
        let (bin, conf) = match self.provider.as_deref() {
            Some("AKS") => ("/k/azurecni/bin", "/k/azurecni/netconf"),
            Some("EKS") => (
                "/Program Files/Amazon/EKS/cni",
                "/Program Files/Amazon/EKS/cni/config",
            ),
            _ => ("/opt/cni/bin", "/etc/cni/net.d"),
        };
        CniDirs {
            bin: on_system_drive(self.cni_bin_dir.as_deref().unwrap_or(bin)),
            conf: on_system_drive(self.cni_config_dir.as_deref().unwrap_or(conf)),
        }
    }

    /// Whether the operator runs Calico on Windows nodes.
    pub fn windows_enabled(&self) -> bool {
        self.windows_dataplane
            .as_deref()
            .is_some_and(|d| d.eq_ignore_ascii_case("HNS"))
    }

    /// Whether the operator's DaemonSet keeps off a node with these labels.
    pub fn keeps_off(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        labels.get(LABEL).map(String::as_str) == Some(LABEL_VALUE)
            && self.effective_affinity().is_some_and(|a| excludes(&a))
    }

    /// The `cniVersion` of the operator's Windows CNI config.
    pub fn cni_version(&self) -> &str {
        match self.cni_spec_version.as_deref() {
            None | Some("Auto") => AUTO_CNI_SPEC_VERSION,
            Some(v) => v,
        }
    }

    /// The affinity the DaemonSet has now: the override, else the provider's.
    pub fn effective_affinity(&self) -> Option<Value> {
        self.affinity
            .clone()
            .or_else(|| provider_affinity(self.provider.as_deref()))
    }

    /// The affinity that also keeps the DaemonSet off labelled nodes (`None`: it does already):
    /// our requirement in every required term (terms are ORed, a term's expressions ANDed).
    pub fn excluding_affinity(&self) -> Option<Value> {
        let mut affinity = self.effective_affinity().unwrap_or_else(|| json!({}));
        if excludes(&affinity) {
            return None;
        }
        let required =
            &mut affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        let ours = exclusion();
        match required["nodeSelectorTerms"].as_array_mut() {
            Some(terms) if !terms.is_empty() => {
                for t in terms {
                    if !has_exclusion(t) {
                        match t["matchExpressions"].as_array_mut() {
                            Some(e) => e.push(ours.clone()),
                            None => t["matchExpressions"] = json!([ours.clone()]),
                        }
                    }
                }
            }
            _ => required["nodeSelectorTerms"] = json!([{ "matchExpressions": [ours] }]),
        }
        Some(affinity)
    }
}

/// A path of the operator's (`/etc/cni/net.d`) as Windows reads it: rooted without a drive is
/// on the current drive, C: ("Naming Files, Paths, and Namespaces", Microsoft Learn).
fn on_system_drive(p: &str) -> String {
    let p = p.replace('/', "\\");
    if p.starts_with('\\') && !p.starts_with("\\\\") {
        format!("C:{p}")
    } else {
        p
    }
}

/// The provider's own affinity the operator renders (`pkg/render/windows.go`).
fn provider_affinity(provider: Option<&str>) -> Option<Value> {
    let (key, value) = match provider? {
        "AKS" => ("type", "virtual-kubelet"),
        "EKS" => ("eks.amazonaws.com/compute-type", "fargate"),
        _ => return None,
    };
    Some(
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "NotIn", "values": [value]}]}]}}}),
    )
}

/// Our requirement: the label not `true`.
fn exclusion() -> Value {
    json!({"key": LABEL, "operator": "NotIn", "values": [LABEL_VALUE]})
}

fn has_exclusion(term: &Value) -> bool {
    term["matchExpressions"]
        .as_array()
        .is_some_and(|e| e.iter().any(|x| x == &exclusion()))
}

/// Whether an affinity keeps the DaemonSet off every labelled node: each of its required
/// terms (one at least) carries our requirement.
pub fn excludes(affinity: &Value) -> bool {
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array()
        .is_some_and(|terms| !terms.is_empty() && terms.iter().all(has_exclusion))
}

/// The merge patch that sets the DaemonSet's affinity override (`null`: none).
pub fn affinity_patch(affinity: Option<&Value>) -> Value {
    json!({"spec": {"calicoNodeWindowsDaemonSet": {"spec": {"template": {"spec": {
        "affinity": affinity.cloned().unwrap_or(Value::Null)}}}}}})
}

/// The merge patch that sets `windowsDataplane` (`null`: unset).
pub fn dataplane_patch(value: Option<&str>) -> Value {
    json!({"spec": {"calicoNetwork": {"windowsDataplane": value}}})
}

fn installations(c: &Cluster) -> Api<DynamicObject> {
    c.dynamic(("operator.tigera.io", "v1", "Installation", "installations"))
}

/// Whether a required node affinity takes a node with these labels: no requirement takes
/// every node; terms are ORed and the expressions of one ANDed; `NotIn` and `DoesNotExist`
/// hold for a node without the label (kubernetes `staging/src/k8s.io/component-helpers/
/// scheduling/corev1/nodeaffinity/nodeaffinity.go`; `Gt`/`Lt` compare integers).
pub fn affinity_matches(
    affinity: &Value,
    labels: &std::collections::BTreeMap<String, String>,
) -> bool {
    let required = &affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    let Some(terms) = required["nodeSelectorTerms"].as_array() else {
        return true;
    };
    let holds = |x: &Value| {
        let have = labels.get(x["key"].as_str().unwrap_or_default());
        let values: Vec<&str> = x["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let number = |s: &str| s.parse::<i64>().ok();
        match x["operator"].as_str() {
            Some("In") => have.is_some_and(|h| values.contains(&h.as_str())),
            Some("NotIn") => have.is_none_or(|h| !values.contains(&h.as_str())),
            Some("Exists") => have.is_some(),
            Some("DoesNotExist") => have.is_none(),
            Some(op @ ("Gt" | "Lt")) => {
                let (h, v) = (
                    have.and_then(|h| number(h)),
                    values.first().and_then(|v| number(v)),
                );
                h.zip(v)
                    .is_some_and(|(h, v)| if op == "Gt" { h > v } else { h < v })
            }
            _ => false,
        }
    };
    terms.iter().any(|t| {
        t["matchExpressions"]
            .as_array()
            .is_none_or(|e| e.iter().all(holds))
    })
}

/// The operator's Installation `default`, if there is one, with what its `overlay` sets.
pub fn read(c: &Cluster) -> Result<Option<Installation>, ClusterError> {
    let get = |name: &str| {
        c.call_opt(
            "get",
            &format!("installations.operator.tigera.io/{name}"),
            installations(c).get(name),
        )
        .map(|o| o.map(|o| serde_json::to_value(&o).unwrap_or_default()))
    };
    let Some(default) = get(DEFAULT)? else {
        return Ok(None);
    };
    Ok(Some(match get(OVERLAY) {
        Ok(overlay) => Installation::merged(&default, overlay.as_ref()),
        // Roles naming only `default`: said, and refused by `migrate`.
        Err(e @ ClusterError::Api { code: 403, .. }) => Installation {
            overlay_unreadable: Some(e.to_string()),
            ..Installation::of(&default)
        },
        Err(e) => return Err(e),
    }))
}

/// A JSON merge patch of the Installation `name`, which must keep every field it sets: a CRD
/// older than release-v1.32 prunes the Windows fields ("Field pruning", Kubernetes' CRD docs),
/// so it asks for strict field validation (a 400, from 1.27) and checks the object returned.
pub fn patch_installation(c: &Cluster, name: &str, patch: &Value) -> Result<(), PatchError> {
    let params = PatchParams::default().validation(kube::api::ValidationDirective::Strict);
    let patched = c
        .call(
            "patch",
            &format!("installations.operator.tigera.io/{name}"),
            installations(c).patch(name, &params, &Patch::Merge(patch)),
        )
        .map_err(|e| match &e {
            // apiextensions-apiserver: `strict decoding error: unknown field "spec.x"`.
            ClusterError::Api {
                code: 400, message, ..
            } if message.contains("unknown field") => PatchError::FieldDropped {
                installation: name.to_owned(),
                field: message
                    .split('"')
                    .nth(1)
                    .unwrap_or("a field of the patch")
                    .to_owned(),
            },
            _ => PatchError::Cluster(e),
        })?;
    let got = serde_json::to_value(&patched).unwrap_or_default();
    match dropped(patch, &got, "") {
        Some(field) => Err(PatchError::FieldDropped {
            installation: name.to_owned(),
            field,
        }),
        None => Ok(()),
    }
}

/// Puts back what the merge patch `applied` changed (the patch `restore`) only while every
/// field it set still holds what it set (else `Some` of the field changed, nothing written),
/// on the resourceVersion read, so a change in between is a 409 (apiserver `registry/generic/
/// registry/store.go` `Store.Update`), judged again. One gone is not made again.
impl Cluster {
    pub fn restore_installation(
        &self,
        name: &str,
        applied: &Value,
        restore: &Value,
    ) -> anyhow::Result<Option<String>> {
        let c = self;
        let what = format!("installations.operator.tigera.io/{name}");
        // The operator writes the status often (sharing the resourceVersion): a 409 is read again
        // a few times before it counts.
        for _ in 0..RESTORE_TRIES {
            let Some(now) = c.call_opt("get", &what, installations(c).get(name))? else {
                return Ok(Some("whole object (it was deleted)".to_owned()));
            };
            let now = serde_json::to_value(&now).unwrap_or_default();
            // Already as the restore leaves it (our patch never landed, or was restored).
            if differs(restore, &now, "").is_none() {
                return Ok(None);
            }
            if let Some(field) = differs(applied, &now, "") {
                return Ok(Some(field));
            }
            let mut patch = restore.clone();
            patch["metadata"]["resourceVersion"] = now["metadata"]["resourceVersion"].clone();
            match patch_installation(c, name, &patch) {
                Err(PatchError::Cluster(ClusterError::Api { code: 409, .. })) => continue,
                r => return Ok(r.map(|()| None)?),
            }
        }
        Ok(Some(
            "resourceVersion (it changed each time it was read)".to_owned(),
        ))
    }
}

const RESTORE_TRIES: usize = 5;

/// The value at `path` under `root`, unless null or missing.
fn at(root: &Value, path: &[&str]) -> Option<Value> {
    let leaf = path.iter().fold(root, |v, k| &v[*k]);
    (!leaf.is_null()).then(|| leaf.clone())
}

fn dotted(at: &str, k: &str) -> String {
    match at {
        "" => k.to_owned(),
        _ => format!("{at}.{k}"),
    }
}

/// The first field whose value in `got` is not what the merge patch `patch` set (null: removed),
/// as a dotted path.
fn differs(patch: &Value, got: &Value, at: &str) -> Option<String> {
    let Value::Object(fields) = patch else {
        return (patch != got).then(|| at.to_owned());
    };
    fields.iter().find_map(|(k, v)| {
        let path = dotted(at, k);
        let g = got.get(k).unwrap_or(&Value::Null);
        match v {
            Value::Null => (!g.is_null()).then_some(path),
            v => differs(v, g, &path),
        }
    })
}

/// The first field a merge patch sets (a value that is not null) that `got` lacks, as a
/// dotted path.
fn dropped(patch: &Value, got: &Value, at: &str) -> Option<String> {
    match patch {
        Value::Object(fields) => fields.iter().find_map(|(k, v)| {
            let path = dotted(at, k);
            match (v, got.get(k)) {
                (Value::Null, _) => None,
                (_, None | Some(Value::Null)) => Some(path),
                (v, Some(g)) => dropped(v, g, &path),
            }
        }),
        _ => None,
    }
}

/// Why a patch of the Installation failed.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(
        "the operator's Installation {installation} did not keep {field}: its CRD does not know the field"
    )]
    FieldDropped { installation: String, field: String },
}

impl crate::error::Diagnose for PatchError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        match self {
            Self::Cluster(e) => e.diagnose(),
            Self::FieldDropped { .. } => crate::error::Diagnosis::new(
                crate::error::Exit::Preflight,
                crate::error::Kind::MigrationRefused,
                "upgrade the Tigera operator (and its CRDs) to v1.32 or later, the first to run Calico on Windows nodes (migrate patches the Installation before it changes anything on the node)",
            ),
        }
    }
}

#[cfg(test)]
#[path = "installation_tests.rs"]
mod tests;
