//! Converts a legacy `config.ps1` into `calico-windows.yaml` by reading its text. Nothing in
//! the file is executed: values that only PowerShell could compute are reported, not guessed.

use super::layer::split_list;
use super::resolve::is_placeholder;
use super::spec::{self, Kind};

/// What `$PSScriptRoot` means in config.ps1: the directory it sits in, the install root.
const PS_SCRIPT_ROOT: &str = "C:\\CalicoWindows";

/// One value taken from the file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Imported {
    /// The config.ps1 variable.
    pub variable: String,
    /// The YAML key it becomes (for extra environment: `extra_env.felix.NAME`).
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A line that was read but not turned into a setting, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

/// The result of reading a config.ps1.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Import {
    pub imported: Vec<Imported>,
    /// Understood, and deliberately left to the tool's default (placeholders, `$(hostname)`, ...).
    pub left_default: Vec<Skipped>,
    /// Not understood: listed so nothing is silently lost.
    pub not_understood: Vec<Skipped>,
}

/// A block opened by `if (...) {` or `else {`: whether it is the containerd check, and which branch.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Block {
    Containerd { running: bool },
    Other,
}

/// The text of a config.ps1 as PowerShell reads it: UTF-16LE with a byte-order mark (what
/// Windows PowerShell 5.1's `Out-File` and `>` write), UTF-8 with or without one; without a
/// mark, bytes that are not UTF-8 are read as Windows-1252's Latin range (the ANSI code page).
pub fn decode(bytes: &[u8]) -> String {
    match bytes {
        [0xFF, 0xFE, rest @ ..] => {
            let units: Vec<u16> = rest
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c.get(1).copied().unwrap_or(0)]))
                .collect();
            String::from_utf16_lossy(&units)
        }
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8_lossy(rest).into_owned(),
        _ => match std::str::from_utf8(bytes) {
            Ok(s) => s.to_owned(),
            Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
        },
    }
}

/// Reads config.ps1 text, in time linear in its length.
pub fn import(text: &str) -> Import {
    let mut reader = Reader::default();
    // The line a `<#` comment was opened on, while it is open. One never closed is said: an
    // administrator editing config.ps1 by hand before migrating can leave one, and PowerShell
    // refuses the file (PowerShell tokenizer.cs, MissingTerminatorMultiLineComment).
    let mut block_comment: Option<(usize, &str)> = None;
    for (i, raw_line) in text.lines().enumerate() {
        let line = raw_line.trim();
        if block_comment.is_some() || line.starts_with("<#") {
            if line.contains("#>") {
                block_comment = None;
            } else if block_comment.is_none() {
                block_comment = Some((i + 1, line));
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        reader.line(i + 1, line);
    }
    if let Some((line, text)) = block_comment {
        reader.out.not_understood.push(skipped(line, text, "a <# block comment that is never closed: PowerShell refuses the whole file, and nothing after this line was imported"));
    }
    reader.finish()
}

/// A skipped line with its reason.
fn skipped(line: usize, text: &str, reason: &str) -> Skipped {
    Skipped {
        line,
        text: text.to_owned(),
        reason: reason.to_owned(),
    }
}

/// What has been read so far.
#[derive(Default)]
struct Reader {
    out: Import,
    blocks: Vec<Block>,
    // Values by variable (PowerShell's environment is case-insensitive), in PowerShell's
    // order of effect: `$env:X =` always sets, `Set-EnvVarIfNotSet` only when nothing set X
    // before.
    values: Values,
    // Variables Calico overrides with containerd's directory when containerd runs.
    containerd_overrides: Vec<String>,
}

impl Reader {
    /// One line that is not a comment: a block opened or closed, or a setting.
    fn line(&mut self, n: usize, line: &str) {
        let skip = |reason: &str| skipped(n, line, reason);
        if let Some(block) = control_line(line, &mut self.blocks) {
            if block == Some(Block::Other) {
                self.out.not_understood.push(skip(
                    "a condition; not evaluated, and the lines inside it are not imported",
                ));
            }
            return;
        }
        let Some((forced, name, value_src)) = assignment(line) else {
            self.out.not_understood.push(skip(
                "not a setting; ignored, as nothing in config.ps1 is executed",
            ));
            return;
        };
        let block = self.blocks.last().copied();
        if block == Some(Block::Other) {
            self.out.not_understood.push(skip(
                "inside a condition; set this value by hand if it applies to this node",
            ));
            return;
        }
        let evaluated = if forced {
            evaluate(&value_src, &self.values)
        } else {
            argument(&value_src, &self.values)
        };
        match evaluated {
            Value::Literal(value) => self.literal(n, line, forced, name, value, block),
            Value::Dynamic(why) => match default_for_dynamic(&name, &value_src, block) {
                Some(note) => {
                    if matches!(block, Some(Block::Containerd { running: true })) {
                        self.containerd_overrides.push(name.to_ascii_uppercase());
                    }
                    self.out.left_default.push(skip(&note))
                }
                None => self.out.not_understood.push(skip(&why)),
            },
        }
    }

    /// A setting whose value is known.
    fn literal(
        &mut self,
        n: usize,
        line: &str,
        forced: bool,
        name: String,
        value: String,
        block: Option<Block>,
    ) {
        let skip = |reason: &str| skipped(n, line, reason);
        if let Some(Block::Containerd { running }) = block {
            let runtime_default = docker_dir(&name).filter(|_| !running);
            if runtime_default.is_some_and(|d| d.eq_ignore_ascii_case(&value)) {
                self.out.left_default.push(skip("docker's CNI directory: calicoctl-win derives it from container_runtime: docker"));
            } else {
                self.out.not_understood.push(skip("depends on whether containerd runs; set this value by hand if it applies to this node"));
            }
        } else if is_placeholder(&value) {
            self.out.left_default.push(skip(
                "a placeholder, left unset: the built-in default or the cluster applies",
            ));
        } else if value.is_empty() {
            self.out.left_default.push(skip("empty, left unset"));
        } else if self.values.get(&name).is_some() && !forced {
            self.out.left_default.push(skip(
                "already set above; Set-EnvVarIfNotSet keeps the earlier value",
            ));
        } else {
            self.values.set(Imported {
                key: key_for(&name),
                variable: name,
                value,
                line: n,
            });
        }
    }

    /// v3.19–v3.22 set docker's directories, then containerd's when containerd runs: what
    /// Calico effectively uses follows the runtime, which is calicoctl-win's own default.
    fn finish(mut self) -> Import {
        for var in std::mem::take(&mut self.containerd_overrides) {
            let Some(v) = self.values.take(&var) else {
                continue;
            };
            let skip = |reason| skipped(v.line, &format!("{} = {}", v.variable, v.value), reason);
            if v.value
                .eq_ignore_ascii_case(docker_dir(&var).unwrap_or_default())
            {
                self.out.left_default.push(skip("docker's CNI directory, which Calico replaces with containerd's when containerd runs: calicoctl-win derives both from container_runtime"));
            } else {
                self.out.not_understood.push(skip("Calico uses this only where containerd does not run (containerd's directory otherwise); set it by hand if this node runs docker"));
            }
        }
        self.out.imported = self.values.0;
        self.out
    }
}

/// Docker's CNI directory a config.ps1 variable names (`CNI_BIN_DIR`, `CNI_CONF_DIR`), which
/// calicoctl-win derives from `container_runtime: docker`.
fn docker_dir(var: &str) -> Option<&'static str> {
    match var {
        "CNI_BIN_DIR" => Some("c:\\k\\cni"),
        "CNI_CONF_DIR" => Some("c:\\k\\cni\\config"),
        _ => None,
    }
}

/// The imported values in the order they take effect, one per variable (case-insensitive).
#[derive(Default)]
struct Values(Vec<Imported>);

impl Values {
    fn get(&self, name: &str) -> Option<&Imported> {
        self.0
            .iter()
            .find(|v| v.variable.eq_ignore_ascii_case(name))
    }

    /// Removes the variable's value, if any.
    fn take(&mut self, name: &str) -> Option<Imported> {
        let i = self
            .0
            .iter()
            .position(|v| v.variable.eq_ignore_ascii_case(name))?;
        Some(self.0.remove(i))
    }

    /// Sets the variable, which then takes effect last.
    fn set(&mut self, v: Imported) {
        self.take(&v.variable);
        self.0.push(v);
    }
}

/// The YAML key for a config.ps1 variable; unknown variables become extra environment.
fn key_for(variable: &str) -> String {
    if let Some(s) = spec::SETTINGS.iter().find(|s| s.ps1 == Some(variable)) {
        return s.key.to_owned();
    }
    let role = if variable.starts_with("FELIX_") {
        "felix"
    } else if variable.starts_with("BGP_") || variable.starts_with("CONFD_") {
        "confd"
    } else {
        "node"
    };
    format!("extra_env.{role}.{variable}")
}

/// Handles `if (...) {`, `} else {`, `else {`, `{` and `}`. Returns `Some(new block)` for an
/// opening line, `Some(None)` for another control line, `None` for anything else.
fn control_line(line: &str, blocks: &mut Vec<Block>) -> Option<Option<Block>> {
    let lower = line.to_ascii_lowercase();
    let squashed: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
    if squashed == "{" {
        return Some(None);
    }
    if squashed == "}" {
        blocks.pop();
        return Some(None);
    }
    if squashed == "}else{" || squashed == "else{" || squashed == "}else" || squashed == "else" {
        let flipped = match blocks.pop() {
            Some(Block::Containerd { running }) => Block::Containerd { running: !running },
            _ => Block::Other,
        };
        blocks.push(flipped);
        return Some(None);
    }
    if squashed.starts_with("if(") {
        let block = if squashed.starts_with("if(get-iscontainerdrunning)") {
            Block::Containerd { running: true }
        } else {
            Block::Other
        };
        blocks.push(block);
        return Some(Some(block));
    }
    None
}

/// `$env:X = value` (forced) or `Set-EnvVarIfNotSet -var "X" -defaultValue value`.
fn assignment(line: &str) -> Option<(bool, String, String)> {
    let code = strip_comment(line);
    if let Some(rest) = strip_prefix_ci(code, "$env:") {
        let (name, value) = rest.split_once('=')?;
        let name = name.trim();
        return is_var_name(name).then(|| (true, name.to_owned(), value.trim().to_owned()));
    }
    let rest = strip_prefix_ci(code, "Set-EnvVarIfNotSet")?;
    let tokens = tokens(rest);
    let mut name = None;
    let mut value = None;
    let mut it = tokens.into_iter();
    while let Some(t) = it.next() {
        match t.to_ascii_lowercase().as_str() {
            "-var" => name = it.next(),
            "-defaultvalue" => value = Some(it.by_ref().collect::<Vec<_>>().join(" ")),
            _ => return None,
        }
    }
    let name = unquote(&name?)?;
    is_var_name(&name).then(|| (false, name, value.unwrap_or_default()))
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A variable's name: letters, digits and '_', not starting with a digit.
pub(super) fn is_var_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The line without a trailing `# comment` outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') => return line[..i].trim_end(),
            _ => {}
        }
    }
    line.trim_end()
}

/// Splits arguments on whitespace outside quotes, keeping quotes. (`-defaultValue` takes every
/// token after it, so an expression's blanks do not end it.)
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    for c in s.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), _) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A quoted or bare word without its quotes; `None` for an expression.
fn unquote(token: &str) -> Option<String> {
    let t = token.trim();
    for q in ['\'', '"'] {
        if let Some(inner) = t.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return Some(inner.to_owned());
        }
    }
    (!t.contains(['$', '(', ')', '"', '\'', ' ', '@', '{', '}'])).then(|| t.to_owned())
}

enum Value {
    Literal(String),
    /// Only PowerShell could compute it; the text says why it was not imported.
    Dynamic(String),
}

/// A PowerShell expression, never evaluated.
fn dynamic() -> Value {
    Value::Dynamic(
        "a PowerShell expression; not evaluated, as nothing in config.ps1 is executed".into(),
    )
}

/// The value of a right-hand side, without running anything.
fn evaluate(src: &str, earlier: &Values) -> Value {
    let src = src.trim();
    if let Some(inner) = src.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return Value::Literal(inner.replace("''", "'"));
    }
    let Some(inner) = src.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return match unquote(src) {
            // After `=` a bare number is a value; any other bare word runs a command.
            Some(word) if word.parse::<f64>().is_ok() => Value::Literal(word),
            Some(_) => Value::Dynamic(
                "a command (a bare word after '=' runs it); not run, as nothing in config.ps1 is executed".into(),
            ),
            None => match strip_prefix_ci(src, "$env:").filter(|n| is_var_name(n)) {
                Some(var) => match earlier.get(var) {
                    Some(v) => Value::Literal(v.value.clone()),
                    None => Value::Dynamic(format!(
                        "refers to ${var}, which this file does not set to a value"
                    )),
                },
                None => dynamic(),
            },
        };
    };
    match expand_double_quoted(inner) {
        Some(s) => Value::Literal(s),
        None => dynamic(),
    }
}

/// The inside of a double-quoted string: `$PSScriptRoot` (as every Calico config.ps1 writes
/// it) expands to the install root; any other `$`, a backtick escape or a doubled quote (which
/// no config.ps1 writes) is left as an expression.
fn expand_double_quoted(inner: &str) -> Option<String> {
    let expanded = inner.replace("$PSScriptRoot", PS_SCRIPT_ROOT);
    (!expanded.contains(['$', '`', '"'])).then_some(expanded)
}

/// A command argument as PowerShell's argument mode reads it: a quoted string, a bare word
/// or `$env:X`. An argument that starts with a quoted string ends with it, and what follows is
/// another argument (`""name""` is `` and `name`, the bare word with an empty string joined to
/// it: PowerShell issue 6467), as an edited quickstart config.ps1 has it
/// (tests/import-ps1/v3.31-quickstart-edited.ps1). Words joined to quotes, and doubled quotes,
/// no config.ps1 writes: they are left as expressions.
fn argument(src: &str, earlier: &Values) -> Value {
    let src = src.trim();
    let Some(q) = src.chars().next().filter(|c| matches!(c, '"' | '\'')) else {
        return match unquote(src) {
            Some(word) => Value::Literal(word),
            None => evaluate(src, earlier),
        };
    };
    let Some(end) = src[1..].find(q).map(|i| i + 1) else {
        return dynamic();
    };
    let rest = &src[end + 1..];
    if rest.is_empty() {
        return evaluate(src, earlier);
    }
    if rest.starts_with(q) || src[1..end].contains('$') {
        return dynamic();
    }
    let joined = rest.replace("\"\"", "").replace("''", "");
    let plain =
        !joined.contains(['"', '\'', '$', '(', '`']) && !joined.contains(char::is_whitespace);
    let second = if plain && !joined.is_empty() {
        format!("\"{joined}\"")
    } else {
        rest.to_owned()
    };
    Value::Dynamic(format!(
        "PowerShell reads {src} as two arguments, \"{}\" and {second} (an argument that starts with a quoted string ends with it: PowerShell issue 6467), and Set-EnvVarIfNotSet takes no third one: this line fails when config.ps1 runs and sets nothing",
        &src[1..end]
    ))
}

/// Dynamic values whose meaning matches a built-in default, with the note to show.
fn default_for_dynamic(name: &str, src: &str, block: Option<Block>) -> Option<String> {
    let squashed: String = src
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    match name {
        "NODENAME" if squashed == "$(hostname).tolower()" => {
            Some("this host's name in lower case: the same as calicoctl-win's default for node.name".into())
        }
        "CALICO_K8S_NODE_REF" if squashed == "$env:nodename" => {
            Some("the node name: the same as calicoctl-win's default for node.k8s_node_ref".into())
        }
        "CNI_BIN_DIR" | "CNI_CONF_DIR"
            if squashed.trim_start_matches('(').starts_with("get-containerdcni")
                && block == Some(Block::Containerd { running: true }) =>
        {
            Some("containerd's CNI directory: calicoctl-win derives it from container_runtime: containerd".into())
        }
        _ => None,
    }
}

/// The YAML file for an import, grouped by section in the settings table's order, each value
/// annotated with the config.ps1 line it came from.
pub fn to_yaml(import: &Import, source_name: &str) -> String {
    let mut out = format!(
        "# calico-windows.yaml imported from {source_name} by calicoctl-win config import-ps1.\n\
         # Settings not listed here take calicoctl-win's defaults; see docs/configuration.md.\n"
    );
    let mut section = "";
    for s in spec::SETTINGS {
        let (sec, leaf) = s.key.split_once('.').unwrap_or(("", s.key));
        let entries: Vec<&Imported> = match s.kind {
            Kind::Map => import
                .imported
                .iter()
                .filter(|i| i.key.starts_with(&format!("{}.", s.key)))
                .collect(),
            _ => import.imported.iter().filter(|i| i.key == s.key).collect(),
        };
        if entries.is_empty() {
            continue;
        }
        if sec != section && !sec.is_empty() {
            out.push_str(&format!("{sec}:\n"));
        }
        section = sec;
        let indent = if sec.is_empty() { "" } else { "  " };
        match s.kind {
            Kind::Map => {
                out.push_str(&format!("{indent}{leaf}:\n"));
                for e in entries {
                    let name = &e.key[s.key.len() + 1..];
                    out.push_str(&format!(
                        "{indent}  {name}: {}  # line {}\n",
                        quoted(&e.value),
                        e.line
                    ));
                }
            }
            Kind::List => {
                let e = entries[0];
                let items: Vec<String> = split_list(&e.value).iter().map(|i| quoted(i)).collect();
                out.push_str(&format!(
                    "{indent}{leaf}: [{}]  # {} line {}\n",
                    items.join(", "),
                    e.variable,
                    e.line
                ));
            }
            Kind::Scalar => {
                let e = entries[0];
                let value = if s.key == "node.startup_valid_ip_timeout"
                    && e.value.bytes().all(|b| b.is_ascii_digit())
                {
                    format!("{}s", e.value)
                } else {
                    e.value.clone()
                };
                out.push_str(&format!(
                    "{indent}{leaf}: {}  # {} line {}\n",
                    quoted(&value),
                    e.variable,
                    e.line
                ));
            }
        }
    }
    out
}

/// A YAML double-quoted scalar. A character YAML does not allow printed (a control, a
/// byte-order mark, U+FFFE, U+FFFF) is escaped: JSON's string syntax leaves C1 controls and DEL
/// bare, which a YAML parser refuses.
fn quoted(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() || matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}') => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both assignment forms are read, `$env:` winning, a single-quoted value literal; an
    /// expression is listed, not evaluated.
    #[test]
    fn both_assignment_forms_are_read_and_env_assignment_wins() {
        let text = "$env:VXLAN_MAC_PREFIX = \"0E-2A\"\nSet-EnvVarIfNotSet -var \"VXLAN_MAC_PREFIX\" -defaultValue \"0E-FF\"\n$env:VXLAN_VNI = 4097\n$env:KUBE_NETWORK = 'azure.*'  # AKS\n";
        let i = import(text);
        let keys: Vec<_> = i
            .imported
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("vxlan.mac_prefix", "0E-2A"),
                ("vxlan.vni", "4097"),
                ("kube_network", "azure.*")
            ]
        );
        assert_eq!(i.left_default.len(), 1);
        let i = import(
            "Set-EnvVarIfNotSet -var \"IP\" -defaultValue (Get-NodeIp)\n$env:NODENAME = $(Invoke-RestMethod http://x)\n",
        );
        assert!(i.imported.is_empty());
        assert_eq!(i.not_understood.len(), 2);
    }

    /// Found by the fuzzer: a C1 control (U+009B) in a value was written bare by JSON's
    /// string syntax, and the YAML parser refused the imported file.
    #[test]
    fn controls_yaml_does_not_print_are_escaped_and_read_back() {
        for value in [
            "c:\\Calico\u{9b}-tls",
            "a\u{7f}b",
            "\u{feff}x\u{fffe}",
            "tab\tnew\nline\r\u{1}",
            "quote\" back\\ nel\u{85} é 😀",
        ] {
            let yaml = format!("v: {}\n", quoted(value));
            let read: std::collections::BTreeMap<String, String> =
                serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"));
            assert_eq!(read["v"], value, "{yaml}");
        }
    }

    /// PowerShell's argument mode (about_Parsing; PowerShell issue 6467 for an argument that
    /// starts with a quoted string, as tests/import-ps1/v3.31-quickstart-edited.ps1 has it).
    #[test]
    fn arguments_are_read_as_powershell_does() {
        let set = |value: &str| {
            import(&format!(
                "Set-EnvVarIfNotSet -var \"KUBE_NETWORK\" -defaultValue {value}\n"
            ))
        };
        for (value, want) in [
            (r#""Calico.*""#, "Calico.*"),
            ("'azure.*'", "azure.*"),
            ("4097", "4097"),
        ] {
            let i = set(value);
            assert_eq!(
                i.imported.first().map(|e| e.value.as_str()),
                Some(want),
                "{value}"
            );
        }
        // The second argument as PowerShell reads it, where it is a plain word.
        for (value, two) in [
            (r#"""name"""#, Some(r#""" and "name""#)),
            (r#""a"b"#, Some(r#""a" and "b""#)),
            ("'a'b", Some(r#""a" and "b""#)),
            (r#"""C:\k\cni"""#, Some(r#""" and "C:\k\cni""#)),
            (r#""a""b""#, None),
            (r#"a"b""#, None),
        ] {
            let i = set(value);
            assert!(i.imported.is_empty(), "{value}");
            let why = &i.not_understood[0].reason;
            let told = match two {
                Some(t) => why.contains(&format!("two arguments, {t} (an argument")),
                None => !why.contains("two arguments"),
            };
            assert!(
                told && why.contains("6467") == two.is_some(),
                "{value}: {why}"
            );
        }
    }
}
