//! Reading an assembly listing: one function's instructions and labels.

use std::collections::HashMap;

/// One instruction of a listing.
#[derive(Clone, Debug)]
pub(crate) struct Insn {
    pub(crate) mnemonic: String,
    pub(crate) operands: String,
    pub(crate) text: String,
}

/// A function's body: instructions and where each label points.
pub(crate) struct Body {
    pub(crate) insns: Vec<Insn>,
    pub(crate) labels: HashMap<String, usize>,
}

/// The symbol `name` is set to, when the listing defines it as an alias.
pub(crate) fn alias_of<'a>(asm: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("{name} = ");
    asm.lines()
        .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
}

/// The instructions of `name` in an assembly listing.
pub(crate) fn function(asm: &str, name: &str) -> Option<Body> {
    let mut lines = asm
        .lines()
        .skip_while(|l| l.trim_end() != format!("{name}:"));
    lines.next()?;
    let mut insns = Vec::new();
    let mut labels = HashMap::new();
    for line in lines {
        let t = line.trim();
        if t.starts_with(".Lfunc_end") || t.starts_with(".size") || t.starts_with(".section") {
            break;
        }
        if let Some(label) = t.strip_suffix(':') {
            labels.insert(label.to_string(), insns.len());
            continue;
        }
        if t.is_empty()
            || t.starts_with('.')
            || t.starts_with('#')
            || t.starts_with("//")
            || t.starts_with('@')
        {
            continue;
        }
        let t = t
            .split(" //")
            .next()
            .unwrap_or(t)
            .split(" @")
            .next()
            .unwrap_or(t)
            .trim();
        let mut parts = t.splitn(2, char::is_whitespace);
        let mut mnemonic = parts.next().unwrap_or("").to_string();
        let mut operands = parts.next().unwrap_or("").trim().to_string();
        if mnemonic == "lock" {
            // `lock cmpxchgq ...` is one instruction.
            let mut rest = operands.splitn(2, char::is_whitespace);
            mnemonic = format!("lock {}", rest.next().unwrap_or(""));
            operands = rest.next().unwrap_or("").trim().to_string();
        }
        insns.push(Insn {
            mnemonic,
            operands,
            text: t.to_string(),
        });
    }
    Some(Body { insns, labels })
}
