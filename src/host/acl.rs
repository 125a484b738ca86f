//! Who may change a file or directory, read from its SDDL by meaning (Microsoft's "Security
//! Descriptor String Format"). What runs as SYSTEM must come from directories only SYSTEM and
//! Administrators can change: `writers` names every other identity that may write there.

/// What install gives the directories whose files run as SYSTEM: owned by Administrators,
/// full control for SYSTEM and Administrators, read and execute for Users, inherited by what
/// is under it, nothing inherited from the parent (`P`).
pub const PROTECTED_DIR: &str = "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)";

const SYSTEM: &str = "S-1-5-18";
const ADMINISTRATORS: &str = "S-1-5-32-544";
const CREATOR_OWNER: &str = "S-1-3-0";
/// NT SERVICE\TrustedInstaller, which owns Windows' own directories.
const TRUSTED_INSTALLER: &str = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464";

/// The SDDL aliases of the well-known SIDs that appear on file system objects, and what
/// people call them (the SID itself where no name is given).
const ALIASES: &[(&str, &str, &str)] = &[
    ("SY", SYSTEM, "SYSTEM"),
    ("BA", ADMINISTRATORS, "Administrators"),
    ("BU", "S-1-5-32-545", "Users"),
    ("AU", "S-1-5-11", "Authenticated Users"),
    ("WD", "S-1-1-0", "Everyone"),
    ("CO", CREATOR_OWNER, "CREATOR OWNER"),
    ("CG", "S-1-3-1", ""),
    ("OW", "S-1-3-4", ""),
    ("IU", "S-1-5-4", "INTERACTIVE"),
    ("NU", "S-1-5-2", ""),
    ("AN", "S-1-5-7", "ANONYMOUS LOGON"),
    ("BG", "S-1-5-32-546", "Guests"),
    ("PU", "S-1-5-32-547", ""),
    ("NS", "S-1-5-20", ""),
    ("LS", "S-1-5-19", ""),
    ("AC", "S-1-15-2-1", ""),
];

/// What people call a SID.
fn name_of(sid: &str) -> String {
    let known = ALIASES.iter().find(|(_, s, _)| *s == sid).map(|(.., n)| *n);
    let relative = || {
        let rid = sid.strip_prefix(RELATIVE_DOMAIN)?.parse::<u32>().ok()?;
        RELATIVE_ALIASES
            .iter()
            .find(|(_, r, _)| *r == rid)
            .map(|(.., n)| *n)
    };
    match known.filter(|n| !n.is_empty()).or_else(relative) {
        Some(name) => name.into(),
        None if sid == TRUSTED_INSTALLER => "TrustedInstaller".into(),
        None => sid.into(),
    }
}

/// The access rights, as the bits of an access mask (winnt.h).
const WRITE_DATA: u32 = 0x2;
const APPEND_DATA: u32 = 0x4;
const WRITE_EA: u32 = 0x10;
const DELETE_CHILD: u32 = 0x40;
const WRITE_ATTRIBUTES: u32 = 0x100;
const DELETE: u32 = 0x1_0000;
const WRITE_DAC: u32 = 0x4_0000;
const WRITE_OWNER: u32 = 0x8_0000;
const GENERIC_ALL: u32 = 0x1000_0000;
const GENERIC_WRITE: u32 = 0x4000_0000;

/// The rights that let someone change what runs: write or add, delete, WRITE_DAC, ownership.
const CHANGES: u32 = WRITE_DATA
    | APPEND_DATA
    | WRITE_EA
    | DELETE_CHILD
    | WRITE_ATTRIBUTES
    | DELETE
    | WRITE_DAC
    | WRITE_OWNER
    | GENERIC_ALL
    | GENERIC_WRITE;

/// An access mask from SDDL: hex, or the two-letter rights.
fn mask(text: &str) -> Result<u32, String> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u32::from_str_radix(hex, 16).map_err(|_| format!("bad access mask {text:?}"));
    }
    let mut m = 0;
    for code in text.as_bytes().chunks(2) {
        m |= match code {
            b"FA" => 0x1F_01FF,
            b"FR" => 0x12_0089,
            b"FW" => 0x12_0116,
            b"FX" => 0x12_00A0,
            b"GA" => GENERIC_ALL,
            b"GR" => 0x8000_0000,
            b"GW" => GENERIC_WRITE,
            b"GX" => 0x2000_0000,
            b"SD" => DELETE,
            b"RC" => 0x2_0000,
            b"WD" => WRITE_DAC,
            b"WO" => WRITE_OWNER,
            b"CC" => 0x1,
            b"DC" => WRITE_DATA,
            b"LC" => APPEND_DATA,
            b"SW" => 0x8,
            b"RP" => WRITE_EA,
            b"WP" => 0x20,
            b"DT" => DELETE_CHILD,
            b"LO" => 0x80,
            b"CR" => WRITE_ATTRIBUTES,
            _ => return Err(format!("unknown right {:?}", String::from_utf8_lossy(code))),
        };
    }
    Ok(m)
}

/// One entry of a DACL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ace {
    pub allow: bool,
    /// Inherited by files (`OI`), by directories (`CI`); not for the object itself (`IO`).
    pub object_inherit: bool,
    pub container_inherit: bool,
    pub inherit_only: bool,
    /// The entry came from the parent (`ID`).
    pub inherited: bool,
    pub mask: u32,
    pub sid: String,
}

/// An owner and a DACL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub owner: Option<String>,
    /// `P`: nothing is inherited from the parent.
    pub protected: bool,
    pub aces: Vec<Ace>,
}

/// The SDDL aliases of SIDs relative to the machine's own ("LA" for the built-in
/// Administrator, RID 500; Microsoft's "SID Strings"), each under a placeholder domain.
const RELATIVE_ALIASES: &[(&str, u32, &str)] = &[
    ("LA", 500, "Administrator (the built-in account)"),
    ("LG", 501, "Guest (the built-in account)"),
    ("DA", 512, "Domain Admins"),
    ("DU", 513, "Domain Users"),
    ("DG", 514, "Domain Guests"),
    ("DC", 515, "Domain Computers"),
    ("DD", 516, "Domain Controllers"),
    ("CA", 517, "Cert Publishers"),
    ("SA", 518, "Schema Admins"),
    ("EA", 519, "Enterprise Admins"),
    ("PA", 520, "Group Policy Creator Owners"),
];

/// The placeholder domain of a relative alias: `S-1-5-21-0-0-0-<RID>`.
const RELATIVE_DOMAIN: &str = "S-1-5-21-0-0-0-";

fn sid(text: &str) -> String {
    if let Some((_, rid, _)) = RELATIVE_ALIASES.iter().find(|(alias, ..)| *alias == text) {
        return format!("{RELATIVE_DOMAIN}{rid}");
    }
    ALIASES
        .iter()
        .find(|(alias, ..)| *alias == text)
        .map_or_else(|| text.to_owned(), |(_, sid, _)| (*sid).to_owned())
}

fn ace(text: &str) -> Result<Ace, String> {
    let fields: Vec<&str> = text.split(';').collect();
    let [kind, flags, rights, _, _, who] = fields.as_slice() else {
        return Err(format!("bad entry ({text})"));
    };
    let flags: Vec<&[u8]> = flags.as_bytes().chunks(2).collect();
    let has = |f: &[u8]| flags.contains(&f);
    Ok(Ace {
        allow: match *kind {
            "A" => true,
            "D" => false,
            other => return Err(format!("entry type {other:?} ({text})")),
        },
        object_inherit: has(b"OI"),
        container_inherit: has(b"CI"),
        inherit_only: has(b"IO"),
        inherited: has(b"ID"),
        mask: mask(rights)?,
        sid: sid(who),
    })
}

/// Where each part (`O:`, `G:`, `D:`, `S:`) of an SDDL string begins, outside parentheses.
fn parts(sddl: &str) -> Vec<(u8, &str)> {
    let b = sddl.as_bytes();
    let mut starts = Vec::new();
    let mut depth = 0i32;
    for i in 0..b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'O' | b'G' | b'D' | b'S' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                starts.push(i)
            }
            _ => {}
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let end = starts.get(k + 1).copied().unwrap_or(b.len());
            (b[i], &sddl[i + 2..end])
        })
        .collect()
}

/// Reads the owner and the DACL of an SDDL string.
pub fn parse(sddl: &str) -> Result<Descriptor, String> {
    let mut d = Descriptor {
        owner: None,
        protected: false,
        aces: Vec::new(),
    };
    let found = parts(sddl);
    // The first part must begin the string: anything before it is not SDDL.
    if found.is_empty() || sddl.get(1..2) != Some(":") {
        return Err(format!("not a security descriptor: {sddl:?}"));
    }
    for (tag, part) in found {
        match tag {
            b'O' => d.owner = Some(sid(part)),
            b'D' => {
                let (flags, aces) = part.split_at(part.find('(').unwrap_or(part.len()));
                d.protected = flags.contains('P');
                for a in aces.split(['(', ')']).filter(|a| !a.is_empty()) {
                    d.aces.push(ace(a)?);
                }
            }
            _ => {}
        }
    }
    Ok(d)
}

fn alias(sid: &str) -> &str {
    ALIASES
        .iter()
        .find(|(_, s, _)| *s == sid)
        .map_or(sid, |(alias, ..)| alias)
}

/// The SDDL of a descriptor (rights as hex masks), as Windows would write it back.
pub fn to_sddl(d: &Descriptor) -> String {
    let mut out = String::new();
    if let Some(o) = &d.owner {
        out.push_str(&format!("O:{}", alias(o)));
    }
    out.push_str("D:");
    if d.protected {
        out.push('P');
    }
    out.push_str("AI");
    for a in &d.aces {
        let flags: String = [
            (a.object_inherit, "OI"),
            (a.container_inherit, "CI"),
            (a.inherit_only, "IO"),
            (a.inherited, "ID"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect();
        out.push_str(&format!(
            "({};{flags};{:#x};;;{})",
            if a.allow { "A" } else { "D" },
            a.mask,
            alias(&a.sid)
        ));
    }
    out
}

/// What a file (`dir == false`) or directory made under `parent` without an access list of
/// its own gets, owned by Administrators.
pub fn inherited_from(parent: &Descriptor, dir: bool) -> Descriptor {
    let aces = parent
        .aces
        .iter()
        .filter(|a| {
            if dir {
                a.container_inherit
            } else {
                a.object_inherit
            }
        })
        .map(|a| Ace {
            object_inherit: dir && a.object_inherit,
            container_inherit: dir && a.container_inherit,
            inherit_only: false,
            inherited: true,
            ..a.clone()
        })
        .collect();
    Descriptor {
        owner: Some(ADMINISTRATORS.into()),
        protected: false,
        aces,
    }
}

/// The drive root as Windows Server 2019 and 2022 ship it (DISA STIG WN19-00-000140 /
/// WN22-00-000140): Users may add files and folders to a folder made under it.
pub const DRIVE_ROOT: &str = "O:S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464D:PAI(A;OICIIO;GA;;;CO)(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;CI;LC;;;BU)(A;CIIO;DC;;;BU)(A;OICI;0x1200a9;;;BU)";

/// `C:\Program Files` as Windows Server ships it (`icacls "C:\Program Files"`): only SYSTEM,
/// Administrators and TrustedInstaller change what is made there.
pub const PROGRAM_FILES: &str = "O:S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464D:PAI(A;;0x1301bf;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;CIIO;GA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)(A;;0x1301bf;;;SY)(A;OICIIO;GA;;;SY)(A;;0x1301bf;;;BA)(A;OICIIO;GA;;;BA)(A;;0x1200a9;;;BU)(A;OICIIO;GXGR;;;BU)(A;OICIIO;GA;;;CO)(A;;0x1200a9;;;AC)(A;OICIIO;GXGR;;;AC)";

/// A secret file's: SYSTEM and Administrators only (what `Access::Secret` writes).
pub const SECRET_FILE: &str = "O:BAD:P(A;;FA;;;SY)(A;;FA;;;BA)";

fn trusted(sid: &str) -> bool {
    matches!(sid, SYSTEM | ADMINISTRATORS | TRUSTED_INSTALLER | CREATOR_OWNER)
        // The built-in Administrator account (RID 500).
        || (sid.starts_with("S-1-5-21-") && sid.ends_with("-500"))
}

/// The rights of `mask` that change what runs, in words.
fn rights(mask: u32) -> String {
    let mut out = Vec::new();
    if mask & (GENERIC_ALL | WRITE_DATA | APPEND_DATA | GENERIC_WRITE | WRITE_EA | WRITE_ATTRIBUTES)
        != 0
    {
        out.push("write");
    }
    if mask & (GENERIC_ALL | DELETE | DELETE_CHILD) != 0 {
        out.push("delete");
    }
    if mask & (GENERIC_ALL | WRITE_DAC) != 0 {
        out.push("change the access list");
    }
    if mask & (GENERIC_ALL | WRITE_OWNER) != 0 {
        out.push("take ownership");
    }
    out.join(", ")
}

/// Every identity but SYSTEM, Administrators, TrustedInstaller, CREATOR OWNER or an admin
/// owner that may change the object, in words (`Users may write (inherited from the parent)`).
pub fn writers(d: &Descriptor) -> Vec<String> {
    writers_but(d, None)
}

/// `writers`, also trusting `admin`: the account of this elevated process, an administrator.
pub fn writers_but(d: &Descriptor, admin: Option<&str>) -> Vec<String> {
    let trusted = |sid: &str| trusted(sid) || Some(sid) == admin;
    let mut out: Vec<String> = owner_but(d, admin).into_iter().collect();
    for a in d.aces.iter().filter(|a| a.allow && a.mask & CHANGES != 0) {
        let applies = !a.inherit_only || a.object_inherit || a.container_inherit;
        if !applies || trusted(&a.sid) {
            continue;
        }
        let line = format!(
            "{} may {}{}",
            name_of(&a.sid),
            rights(a.mask),
            if a.inherited {
                " (inherited from the parent)"
            } else {
                ""
            }
        );
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// Its owner, said as `writers_but` says it, unless SYSTEM, Administrators or `admin`.
pub fn owner_but(d: &Descriptor, admin: Option<&str>) -> Option<String> {
    d.owner
        .as_deref()
        .filter(|o| !trusted(o) && Some(*o) != admin)
        .map(|o| format!("its owner {} may change the access list", name_of(o)))
}

/// Whether `d` is what `PROTECTED_DIR` says, by meaning: nothing inherited, nobody else may
/// change it, SYSTEM and Administrators have full control here and below.
pub fn is_protected(d: &Descriptor) -> bool {
    let full = |who: &str| {
        d.aces.iter().any(|a| {
            a.allow
                && a.sid == who
                && a.mask & 0x1F_01FF == 0x1F_01FF
                && a.object_inherit
                && a.container_inherit
                && !a.inherit_only
        })
    };
    d.protected && writers(d).is_empty() && full(SYSTEM) && full(ADMINISTRATORS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder an administrator makes under it, by the inheritance rules (`icacls`:
    /// `Users:(I)(CI)(AD)`, `Users:(I)(CI)(WD)`).
    const UNDER_ROOT: &str = "O:BAD:AI(A;OICIIOID;GA;;;CO)(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;CIID;LC;;;BU)(A;CIID;DC;;;BU)(A;OICIID;0x1200a9;;;BU)";

    /// Who is named: the built-in Administrator written `LA` is an administrator, not a
    /// stranger; Domain Users are; Wine 8 maps a Unix mode's "other" bits to Everyone (a
    /// directory of mode 0777).
    #[test]
    fn the_built_in_administrator_is_trusted_and_others_are_named() {
        for (sddl, named) in [
            (
                "O:LAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;LA)(A;OICI;0x1200a9;;;BU)",
                None,
            ),
            (
                "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;DU)",
                Some("Domain Users may write"),
            ),
            (
                "O:S-1-5-21-0-0-0-1000D:(A;;FA;;;S-1-5-21-0-0-0-1000)(A;;0x1f01ff;;;WD)",
                Some("Everyone may write, delete"),
            ),
        ] {
            let w = writers(&parse(sddl).expect("sddl"));
            match named {
                Some(n) => assert!(w.iter().any(|x| x.starts_with(n)), "{sddl}: {w:?}"),
                None => assert!(w.is_empty(), "{sddl}: {w:?}"),
            }
        }
    }

    #[test]
    fn a_folder_made_under_the_drive_root_is_writable_by_every_user() {
        let d = parse(UNDER_ROOT).expect("sddl");
        assert_eq!(d.owner.as_deref(), Some(ADMINISTRATORS));
        assert!(!d.protected);
        assert_eq!(writers(&d), ["Users may write (inherited from the parent)"]);
        assert!(!is_protected(&d));
        // The root itself lets them add folders, and files to what is made under it.
        let root = parse(DRIVE_ROOT).expect("sddl");
        assert_eq!(writers(&root), ["Users may write"]);
        // What Windows gives the folder is what `inherited_from` computes, by meaning.
        let made = inherited_from(&root, true);
        assert_eq!(writers(&made), writers(&d));
        assert_eq!(parse(&to_sddl(&made)).expect("round trip"), made);
        // A file written there inherits no such right (folders only); a user may add beside it.
        assert!(writers(&inherited_from(&made, false)).is_empty());
        // Under Program Files nobody else may: containerd's directories are safe as made.
        let pf = parse(PROGRAM_FILES).expect("sddl");
        assert!(writers(&pf).is_empty(), "{:?}", writers(&pf));
        let containerd = inherited_from(&inherited_from(&pf, true), true);
        assert!(
            writers(&containerd).is_empty(),
            "{:?}",
            writers(&containerd)
        );
    }

    #[test]
    fn the_protected_directory_is_protected_however_windows_writes_it_back() {
        assert!(is_protected(&parse(PROTECTED_DIR).expect("sddl")));
        // As SetNamedSecurityInfo reads it back: auto-inherited flag, rights spelled out.
        let back = "O:BAD:PAI(A;OICI;FA;;;SY)(A;OICI;0x1f01ff;;;BA)(A;OICI;0x1200a9;;;BU)";
        assert!(is_protected(&parse(back).expect("sddl")));
        // Each of these is not.
        for not in [
            "O:BAD:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)",
            "O:S-1-5-21-1-2-3-1001D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)",
            "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;BU)",
            "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICIIO;GA;;;WD)",
            "O:BAD:P(A;OICI;FA;;;SY)(A;;FA;;;BA)",
        ] {
            assert!(!is_protected(&parse(not).expect("sddl")), "{not}");
        }
    }

    #[test]
    fn bad_sddl_is_an_error_not_a_guess() {
        for bad in ["D:(X;;FA;;;SY)", "D:(A;;ZZ;;;SY)", "Q:BA", "D:(A;;FA;;SY)"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
