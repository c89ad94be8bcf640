//! The device table (the lecture's A100/H100/B200 table, read from the device) and
//! occupancy arithmetic.
use crate::BackendKind;
use crate::{DeviceProps, Gpu};

/// A table of the device's properties.
pub fn device_table(gpu: &Gpu) -> String {
    let p = gpu.props();
    if gpu.kind() == BackendKind::Emulator {
        return format!(
            "device: {}\n  (no GPU properties to read; the emulator models per-block limits of sm_90: \
             1024 threads, {} KiB shared memory)\n",
            p.name,
            p.smem_per_block_optin / 1024
        );
    }
    let mut s = String::new();
    let row = |s: &mut String, k: &str, v: String| s.push_str(&format!("  {k:<34} {v}\n"));
    row(&mut s, "device", p.name.clone());
    row(
        &mut s,
        "compute capability",
        format!("{}.{}", p.compute_capability.0, p.compute_capability.1),
    );
    row(&mut s, "SMs", p.sms.to_string());
    row(
        &mut s,
        "max threads per SM",
        p.max_threads_per_sm.to_string(),
    );
    row(
        &mut s,
        "registers per SM (32-bit)",
        format!("{} ({} KiB)", p.regs_per_sm, p.regs_per_sm * 4 / 1024),
    );
    row(
        &mut s,
        "shared memory per SM",
        format!("{} KiB", p.smem_per_sm / 1024),
    );
    row(
        &mut s,
        "shared memory per block (opt-in)",
        format!("{} KiB", p.smem_per_block_optin / 1024),
    );
    row(
        &mut s,
        "L2 cache",
        format!("{} MiB", p.l2_bytes as f64 / (1 << 20) as f64),
    );
    row(
        &mut s,
        "memory",
        format!("{:.1} GiB", p.total_mem as f64 / (1u64 << 30) as f64),
    );
    row(
        &mut s,
        "memory clock x bus width",
        format!("{} MHz x {} bit", p.mem_clock_khz / 1000, p.bus_width_bits),
    );
    row(
        &mut s,
        "peak DRAM bandwidth (2 x clock x bus)",
        format!("{:.0} GB/s", p.peak_bandwidth() / 1e9),
    );
    row(
        &mut s,
        "SM clock (max)",
        format!("{} MHz", p.sm_clock_khz / 1000),
    );
    row(
        &mut s,
        "peak FP32 (SMs x 128 x 2 x clock)",
        format!("{:.1} TFLOP/s", p.peak_fp32() / 1e12),
    );
    s
}

/// Blocks of one kernel that fit on an SM at once, and what limits them.
pub fn occupancy(
    p: &DeviceProps,
    threads_per_block: u32,
    regs_per_thread: u32,
    smem_per_block: u32,
) -> (u32, &'static str) {
    // Registers are allocated per warp in units of 256.
    let regs_per_warp = (regs_per_thread * 32).next_multiple_of(256);
    let warps = threads_per_block.div_ceil(32);
    let by_threads = p.max_threads_per_sm / threads_per_block.max(1);
    let by_regs = if regs_per_thread == 0 {
        u32::MAX
    } else {
        p.regs_per_sm / (regs_per_warp * warps)
    };
    // 1 KiB per block is reserved by the driver on sm_80+.
    let by_smem = if smem_per_block == 0 {
        u32::MAX
    } else {
        p.smem_per_sm / (smem_per_block + 1024)
    };
    let by_blocks = 32;
    let limits = [
        (by_threads, "threads"),
        (by_regs, "registers"),
        (by_smem, "shared memory"),
        (by_blocks, "blocks per SM"),
    ];
    *limits.iter().min_by_key(|l| l.0).unwrap()
}
