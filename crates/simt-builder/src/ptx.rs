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

/// Aligned block barriers of one kernel that a divergent branch sends different
/// threads to: pairs of `bar.sync` / `barrier.sync.aligned` (and `bar.red`)
/// instructions, neither reachable from the other, that a conditional branch on a
/// thread-dependent predicate (one computed from `%tid`, `%laneid` or `%warpid`)
/// separates, each as `"label A / label B (branch on %p)"`.
///
/// An aligned barrier must be reached at the same instruction by every thread of
/// the block (PTX ISA, `barrier`: "all threads in CTA will execute the same
/// barrier instruction"). The source has one `sync_threads()`; but LLVM, merging
/// `if t == 0 { A } sync_threads(); if t == 0 { B }`, can copy the barrier into
/// both arms, so thread 0 meets the block at a `bar.sync` of its own. Undefined
/// behaviour; on an H100 such kernels hung (2026-11-22 and 2026-12-08). Kernel
/// source cannot see this, and the emulator runs the source: this reads the PTX.
///
/// The analysis is by basic blocks (labels, branches), reachability and a taint of
/// registers by the thread-index registers through every instruction's sources; a
/// branch on a block-uniform value (`%ctaid`, a parameter, a shared-memory
/// broadcast) separating two barriers is allowed, as in CUDA.
pub fn divergent_barriers(entry: &str) -> Vec<String> {
    let ins: Vec<&str> = entry
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .skip_while(|l| *l != "{")
        .skip(1)
        .collect();
    let regs = |s: &str| -> Vec<String> {
        let mut v = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                let j = (i + 1..b.len())
                    .find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_'))
                    .unwrap_or(b.len());
                v.push(s[i..j].to_string());
                i = j;
            } else {
                i += 1;
            }
        }
        v
    };
    // Registers computed from the thread's index, to a fixed point (loops).
    let mut tainted: std::collections::HashSet<String> = std::collections::HashSet::new();
    let seeds = ["%tid", "%laneid", "%warpid"];
    loop {
        let before = tainted.len();
        for l in &ins {
            let body = match l.strip_prefix('@') {
                Some(r) => r.split_once(char::is_whitespace).map_or("", |x| x.1).trim(),
                None => l,
            };
            let Some((op, rest)) = body.split_once(char::is_whitespace) else {
                continue;
            };
            if [
                "bra", "st.", "bar", "barrier", "ret", "exit", "mbarrier", "cp.", "fence", "red.",
            ]
            .iter()
            .any(|p| op.starts_with(p))
            {
                continue;
            }
            // The destination is the first operand (a `{..}` vector counts whole).
            let rest = rest.trim_end_matches(';');
            let split = if rest.starts_with('{') {
                rest.find('}').map_or(rest.len(), |i| i + 1)
            } else {
                rest.find(',').unwrap_or(rest.len())
            };
            let (dst, src) = rest.split_at(split);
            let src_regs = regs(src);
            if src_regs
                .iter()
                .any(|r| tainted.contains(r) || seeds.contains(&r.as_str()))
            {
                tainted.extend(regs(dst));
            }
        }
        if tainted.len() == before {
            break;
        }
    }
    // Basic blocks: a label starts one, a branch, `ret` or `exit` ends one.
    let is_label = |l: &str| l.ends_with(':') && !l.contains(char::is_whitespace);
    let is_end = |l: &str| {
        let b = l.strip_prefix('@').map_or(l, |r| {
            r.split_once(char::is_whitespace).map_or("", |x| x.1).trim()
        });
        b.starts_with("bra") || b.starts_with("ret") || b.starts_with("exit")
    };
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    for &l in &ins {
        if is_label(l) && !cur.is_empty() {
            blocks.push(std::mem::take(&mut cur));
        }
        cur.push(l);
        if is_end(l) {
            blocks.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        blocks.push(cur);
    }
    let label_of: std::collections::HashMap<&str, usize> = blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| is_label(b[0]))
        .map(|(i, b)| (b[0].trim_end_matches(':'), i))
        .collect();
    let n = blocks.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut cond: Vec<Option<String>> = vec![None; n];
    for (i, b) in blocks.iter().enumerate() {
        let last = *b.last().unwrap_or(&"");
        let (pred, body) = match last.strip_prefix('@') {
            Some(r) => {
                let (p, b) = r.split_once(char::is_whitespace).unwrap_or((r, ""));
                (Some(p.trim_start_matches('!').to_string()), b.trim())
            }
            None => (None, last),
        };
        if body.starts_with("bra") {
            let target = body
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .trim_end_matches(';');
            if let Some(&t) = label_of.get(target) {
                succ[i].push(t);
            }
            if pred.is_some() && i + 1 < n {
                succ[i].push(i + 1);
                cond[i] = pred;
            }
        } else if !(body.starts_with("ret") || body.starts_with("exit")) && i + 1 < n {
            succ[i].push(i + 1);
        }
    }
    // reach[i]: the blocks reachable from i, i included.
    let reach: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            let mut seen = vec![false; n];
            let mut stack = vec![i];
            while let Some(k) = stack.pop() {
                if !seen[k] {
                    seen[k] = true;
                    stack.extend(&succ[k]);
                }
            }
            seen
        })
        .collect();
    let is_barrier = |l: &str| {
        [
            "bar.sync",
            "bar.cta.sync",
            "barrier.sync.aligned",
            "barrier.cta.sync.aligned",
            "bar.red",
            "barrier.red",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    };
    let bars: Vec<(usize, usize)> = blocks
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            b.iter()
                .enumerate()
                .filter(|(_, l)| is_barrier(l))
                .map(move |(j, _)| (i, j))
        })
        .collect();
    // Instruction a reaches instruction b (by at least one step).
    let reaches = |(ia, ja): (usize, usize), (ib, jb): (usize, usize)| {
        (ia == ib && ja < jb) || succ[ia].iter().any(|&s| reach[s][ib])
    };
    let mut found = Vec::new();
    for (x, &a) in bars.iter().enumerate() {
        for &b in &bars[x + 1..] {
            if reaches(a, b) || reaches(b, a) {
                continue;
            }
            let sep = (0..n).find(|&i| {
                let Some(p) = &cond[i] else { return false };
                let (s1, s2) = (succ[i][0], succ[i][1]);
                let only = |s: usize, u: usize, v: usize| reach[s][u] && !reach[s][v];
                tainted.contains(p)
                    && ((only(s1, a.0, b.0) && only(s2, b.0, a.0))
                        || (only(s1, b.0, a.0) && only(s2, a.0, b.0)))
            });
            if let Some(i) = sep {
                found.push(format!(
                    "{} / {} (branch on {})",
                    blocks[a.0][0],
                    blocks[b.0][0],
                    cond[i].as_deref().unwrap_or("?")
                ));
            }
        }
    }
    found
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

    /// The shape LLVM made of `if t == 0 { init } sync_threads(); if t == 0 { issue }`
    /// (thread 0 at a `bar.sync` of its own) is found; one barrier after the branch,
    /// and two barriers apart on a block-uniform branch, are not.
    #[test]
    fn divergent_barriers_found_and_uniform_ones_allowed() {
        let bad = ".entry k(\n)\n{\n\tmov.u32 \t%r1, %tid.x;\n\tsetp.ne.b32 \t%p2, %r1, 0;\n\t@%p2 bra \t$L__BB0_4;\n\tbra.uni \t$L__BB0_1;\n$L__BB0_4:\n\tbar.sync \t0;\n\tbra.uni \t$L__BB0_5;\n$L__BB0_1:\n\tmbarrier.init.shared::cta.b64 [%r27], %r28;\n\tbar.sync \t0;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r27], %r29;\n$L__BB0_5:\n\tret;\n}";
        let found = super::divergent_barriers(bad);
        assert_eq!(found, vec!["$L__BB0_4: / $L__BB0_1: (branch on %p2)"]);
        let good = ".entry k(\n)\n{\n\tmov.u32 \t%r1, %tid.x;\n\tsetp.ne.b32 \t%p2, %r1, 0;\n\t@%p2 bra \t$L__BB0_2;\n\tmbarrier.init.shared::cta.b64 [%r27], %r28;\n$L__BB0_2:\n\tbar.sync \t0;\n\tret;\n}";
        assert!(super::divergent_barriers(good).is_empty());
        let uniform = bad.replace("%tid.x", "%ctaid.x");
        assert!(super::divergent_barriers(&uniform).is_empty());
    }
}
