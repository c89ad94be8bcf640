//! The generated PTX module assembles with ptxas for sm_80 and sm_90, with no
//! errors and no register spills; prints the per-kernel resource report.
use rust_simt::profile::{
    find_ptxas, kernel_names, kernel_ptx, ptxas_report, ptxas_report_sm90a, resource_table,
};
use rust_simt::ptx::MODULE;

#[test]
fn every_kernel_is_in_the_module() {
    let names = kernel_names();
    for k in [
        "gelu_fused",
        "gelu_erf_fused",
        "softmax_fused",
        "row_sum",
        "row_max",
        "matmul_relu_naive",
        "matmul_relu_tiled",
        "matmul_relu_tiled_db",
        "matmul_relu_warptiled",
        "matmul_relu_warptiled_wide",
        "matmul_relu_warptiled_wide_tail",
        "matmul_wide_tail_reduce",
        "fill_f32",
    ] {
        assert!(
            names.iter().any(|n| n == k),
            "{k} missing from the PTX module: {names:?}"
        );
        assert!(kernel_ptx(k).unwrap().contains(".entry"), "{k}");
    }
    assert!(MODULE.ptx().contains(".target sm_"), "PTX has a .target");
    assert_eq!(MODULE.crate_name(), "kernels");
    for (k, _) in bounded() {
        let ptx = kernel_ptx(k).unwrap();
        let b = bounds_of(k);
        let want = format!(
            ".maxntid {}, 1, 1\n.minnctapersm {}",
            b.max_block_threads(),
            b.min_blocks_per_sm
        );
        assert!(
            ptx.contains(&want),
            "{k}: launch bounds applied by simt-builder ({want})"
        );
    }
}

#[test]
fn ptxas_assembles_without_spills() {
    let ptxas = find_ptxas().expect(
        "ptxas not found: run scripts/setup.sh (it fetches it into .tools/cuda), or set SIMT_PTXAS",
    );
    for arch in ["sm_80", "sm_90"] {
        let res = ptxas_report(&ptxas, arch)
            .unwrap_or_else(|e| panic!("ptxas -arch={arch} failed:\n{e}"));
        println!("ptxas -v -arch={arch}:\n{}", resource_table(&res));
        assert_eq!(
            res.len(),
            kernel_names().len(),
            "one report line per kernel"
        );
        for r in &res {
            check_spills(arch, r);
        }
        let tiled = res
            .iter()
            .find(|r| r.kernel == "matmul_relu_tiled")
            .unwrap();
        assert_eq!(tiled.smem_bytes, 4 * 2 * 8 * 128, "two 8x128 f32 tiles");
        // Launch bounds cap registers at 65536 / (threads · min_blocks), from each
        // kernel's own #[launch] contract.
        for (k, most) in bounded() {
            let r = res.iter().find(|r| r.kernel == k).unwrap();
            assert!(
                r.registers <= most.min(255),
                "{k}: its launch bounds cap registers at {most}, got {}",
                r.registers
            );
        }
    }
}

/// The kernels with launch bounds (`min_blocks` in their contract) and their
/// register caps, 65536 / (threads · min_blocks).
fn bounded() -> Vec<(&'static str, u32)> {
    use kernels::{matmul_mma_pipelined as p6, matmul_tiled_db as s3, matmul_warptiled as s4};
    fn cap<K: rust_simt::Kernel>() -> (&'static str, u32) {
        (
            K::NAME,
            65536 / (K::BOUNDS.max_block_threads() * K::BOUNDS.min_blocks_per_sm),
        )
    }
    vec![
        cap::<s3::matmul_relu_tiled_db>(),
        cap::<s4::matmul_relu_warptiled>(),
        cap::<kernels::matmul_warptiled_wide::matmul_relu_warptiled_wide>(),
        cap::<kernels::matmul_warptiled_wide_tail::matmul_relu_warptiled_wide_tail>(),
        cap::<kernels::matmul_warptiled_streamk::matmul_relu_warptiled_streamk>(),
        cap::<kernels::matmul_warptiled_tail::matmul_relu_warptiled_tail>(),
        cap::<p6::matmul_mma_pipelined_bf16>(),
        cap::<p6::matmul_mma_pipelined_f16>(),
        cap::<p6::matmul_mma_pipelined_tf32>(),
    ]
}

fn bounds_of(name: &str) -> rust_simt::kernels::simt_std::LaunchBounds {
    use kernels::{matmul_mma_pipelined as p6, matmul_tiled_db as s3, matmul_warptiled as s4};
    use rust_simt::Kernel;
    match name {
        "matmul_relu_tiled_db" => s3::matmul_relu_tiled_db::BOUNDS,
        "matmul_relu_warptiled" => s4::matmul_relu_warptiled::BOUNDS,
        "matmul_relu_warptiled_wide" => {
            kernels::matmul_warptiled_wide::matmul_relu_warptiled_wide::BOUNDS
        }
        "matmul_relu_warptiled_wide_tail" => {
            kernels::matmul_warptiled_wide_tail::matmul_relu_warptiled_wide_tail::BOUNDS
        }
        "matmul_relu_warptiled_streamk" => {
            kernels::matmul_warptiled_streamk::matmul_relu_warptiled_streamk::BOUNDS
        }
        "matmul_relu_warptiled_tail" => {
            kernels::matmul_warptiled_tail::matmul_relu_warptiled_tail::BOUNDS
        }
        "matmul_mma_pipelined_bf16" => p6::matmul_mma_pipelined_bf16::BOUNDS,
        "matmul_mma_pipelined_f16" => p6::matmul_mma_pipelined_f16::BOUNDS,
        _ => p6::matmul_mma_pipelined_tf32::BOUNDS,
    }
}

#[test]
fn hopper_module_assembles_without_spills_or_serialised_wgmma() {
    use kernels::matmul_wgmma as s7;
    use rust_simt::ptx::sm90a::MODULE as HOPPER;
    use rust_simt::Kernel;
    let ptxas = find_ptxas().expect("ptxas not found: run scripts/setup.sh, or set SIMT_PTXAS");
    assert!(
        HOPPER.ptx().contains(".target sm_90a"),
        "the Hopper module targets sm_90a"
    );
    assert!(
        HOPPER.ptx().contains(".version 8.3"),
        "PTX 8.3 (the tensor-map fence)"
    );
    // Only the Hopper kernels: the portable ones stay in the sm_80 module.
    let entries = HOPPER.entries();
    assert!(
        entries.iter().any(|e| e == "matmul_wgmma_bf16"),
        "{entries:?}"
    );
    assert!(!entries.iter().any(|e| e == "gelu_fused"), "{entries:?}");
    // The tile kernels' K loops are compiled into both modules, their kernels into
    // the portable one only; the cluster split-K kernels into this one only.
    assert!(
        !entries.iter().any(|e| e.starts_with("matmul_relu_tile_")
            || e.starts_with("matmul_relu_async_")
            || e == "matmul_splitk_reduce"),
        "{entries:?}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e == "matmul_relu_cluster_tile_64x128_c4"),
        "{entries:?}"
    );
    assert!(!MODULE
        .entries()
        .iter()
        .any(|e| e.starts_with("matmul_relu_cluster_")));
    assert!(!MODULE.entries().iter().any(|e| e == "matmul_wgmma_bf16"));
    let res =
        ptxas_report_sm90a(&ptxas).unwrap_or_else(|e| panic!("ptxas -arch=sm_90a failed:\n{e}"));
    println!("ptxas -v -arch=sm_90a:\n{}", resource_table(&res));
    assert_eq!(res.len(), entries.len());
    use kernels::spill_allowance::SPILL_ALLOWANCE;
    for &(k, _) in SPILL_ALLOWANCE {
        assert!(
            entries
                .iter()
                .chain(MODULE.entries().iter())
                .any(|e| e == k),
            "allowance for no kernel: {k}"
        );
    }
    for r in &res {
        check_spills("sm_90a", r);
    }
    // 384 threads, one block per SM: at most 65536 / 384 = 170 registers, and the
    // launch bounds say so.
    use kernels::matmul_wgmma_cluster as s8;
    for (k, b) in [
        (s7::matmul_wgmma_bf16::NAME, s7::matmul_wgmma_bf16::BOUNDS),
        (s7::matmul_wgmma_f16::NAME, s7::matmul_wgmma_f16::BOUNDS),
        (s7::matmul_wgmma_tf32::NAME, s7::matmul_wgmma_tf32::BOUNDS),
        (
            s8::matmul_wgmma_cluster_bf16::NAME,
            s8::matmul_wgmma_cluster_bf16::BOUNDS,
        ),
        (
            s8::matmul_wgmma_cluster_f16::NAME,
            s8::matmul_wgmma_cluster_f16::BOUNDS,
        ),
        (
            s8::matmul_wgmma_cluster_tf32::NAME,
            s8::matmul_wgmma_cluster_tf32::BOUNDS,
        ),
    ] {
        let r = res.iter().find(|r| r.kernel == k).unwrap();
        assert!(
            r.registers <= 65536 / b.max_block_threads(),
            "{k}: {} registers",
            r.registers
        );
        let ptx = simt_builder_entry(HOPPER.ptx(), k);
        assert!(
            ptx.contains(".maxntid 384, 1, 1\n.minnctapersm 1"),
            "{k}: launch bounds"
        );
        if b.cluster > 1 {
            assert!(
                ptx.contains(&format!(".reqnctapercluster {}, 1, 1", b.cluster)),
                "{k}: cluster dimensions"
            );
        }
    }
}

fn simt_builder_entry(ptx: &str, k: &str) -> String {
    let at = ptx.find(&format!(".entry {k}(")).expect("entry");
    ptx[at..].chars().take(4000).collect()
}

/// No kernel spills or has a stack frame but those allowed a few bytes by name
/// (`kernels/src/spill_allowance.rs`), within their bytes.
fn check_spills(arch: &str, r: &rust_simt::profile::Resources) {
    let allowed = kernels::spill_allowance::SPILL_ALLOWANCE
        .iter()
        .find(|(k, _)| *k == r.kernel)
        .map_or(0, |&(_, b)| b);
    assert!(
        r.spill_stores + r.spill_loads + r.stack_bytes <= allowed,
        "{arch}: {} spills registers or uses a stack frame (its accumulators left the registers?): {} stack, {} + {} spilled, {allowed} allowed (kernels/src/spill_allowance.rs)",
        r.kernel,
        r.stack_bytes,
        r.spill_stores,
        r.spill_loads
    );
}

/// No kernel sends the threads of a block to different aligned barriers on a
/// thread-dependent branch (`simt_builder::ptx::divergent_barriers`): undefined
/// behaviour that the emulator, running the source, cannot see, and that hung
/// `softmax_row_bulk` on an H100 (2026-12-08) until its two `t == 0` regions became
/// one. The four Hopper probes have the shape and are known to hang on the H100
/// (docs/GPU-RUNS.md, 2026-11-22): their tests run on the emulator only.
#[test]
fn no_kernel_splits_a_block_barrier() {
    const KNOWN: [&str; 4] = [
        "probe_bulk",
        "probe_tma",
        "probe_wgmma",
        "probe_wgmma_misuse",
    ];
    let mut bad = Vec::new();
    for m in [&MODULE, &rust_simt::ptx::sm90a::MODULE] {
        let ptx = m.ptx();
        for k in simt_builder::ptx::entries(ptx) {
            let found = simt_builder::ptx::divergent_barriers(
                &simt_builder::ptx::entry_text(ptx, &k).unwrap(),
            );
            if KNOWN.contains(&k.as_str()) {
                assert!(!found.is_empty(), "{k}: fixed? take it off the list");
            } else if !found.is_empty() {
                bad.push(format!("{k}: {}", found.join(", ")));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "aligned barriers reached at different instructions by a divergent branch (keep each \
         thread-0 region and its block barrier as one `if`, then one sync_threads()):\n{}",
        bad.join("\n")
    );
}
