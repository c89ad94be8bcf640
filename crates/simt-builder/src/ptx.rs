//! Reading a PTX module's text: its entries and each entry's code.

/// Names of all kernels (`.entry`) in a module, in order.
pub fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|s| s.trim_end_matches('(').trim().to_string())
        .collect()
}

/// The PTX of one kernel: its `.entry` line through the closing brace.
pub fn entry_text(ptx: &str, name: &str) -> Option<String> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let start = ptx[..start].rfind('\n').map(|i| i + 1).unwrap_or(start);
    let body = &ptx[start..];
    let mut depth = 0i32;
    for (i, ch) in body.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(body[..=i].to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// The `.target` of a module (`sm_80`, ...), if it has one.
pub fn target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map(|t| t.split([',', ' ']).next().unwrap_or(t))
}

#[cfg(test)]
mod tests {
    #[test]
    fn entries_and_text() {
        let ptx = ".version 7.0\n.target sm_80\n.visible .entry k1(\n\t.param .u32 p\n)\n{\n\tret;\n}\n.visible .entry k2(\n)\n{\n{ }\n}\n";
        assert_eq!(super::entries(ptx), vec!["k1", "k2"]);
        assert_eq!(
            super::entry_text(ptx, "k2").unwrap(),
            ".visible .entry k2(\n)\n{\n{ }\n}"
        );
        assert_eq!(super::target(ptx), Some("sm_80"));
        assert!(super::entry_text(ptx, "k3").is_none());
    }
}
