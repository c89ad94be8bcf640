//! Faults leave the process usable: a kernel that traps or writes out of bounds, an
//! allocation past the device's memory, a barrier deadlock. Each is a typed error
//! naming the kernel (and, on the emulator, the block and thread), and afterwards a
//! `Gpu` works again.
//!
//! On a GPU a fault loses the CUDA context for the whole process, so the test that
//! faults a real GPU ([`gpu_fault_then_recovery`]) does it in child processes; the
//! others run the emulator explicitly.
mod common;
use common::*;
use kernels::selftest as p;
use rust_simt::emulator::{EmuError, Order};
use rust_simt::ops::gelu::gelu;
use rust_simt::{dim3, reference, BackendKind, Gpu, LaunchConfig, SimtError};

fn cfg(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig::new(dim3(blocks, 1, 1), dim3(threads, 1, 1))
}

/// GeLU of 1000 values is right on `g`: the device works.
fn works(g: &Gpu) {
    let x: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 100.0).collect();
    let xb = g.upload(&x).unwrap();
    let mut y = poisoned(g, x.len());
    gelu(g, &xb, &mut y).unwrap();
    assert_close(
        "gelu after a fault",
        0,
        &g.download(&y).unwrap(),
        &reference::gelu_tanh(&x),
        2e-5,
        1e-6,
        1e-4,
    );
}

#[test]
fn emulator_write_past_a_buffer_names_block_and_thread() {
    for order in [Order::InOrder, Order::Reversed, Order::Random(3)] {
        let g = emulator(order);
        let mut x = g.upload(&[0.0f32; 100]).unwrap();
        // Float 200 is 400 bytes past the end of the 400-byte buffer: in its guard page.
        // SAFETY: out of bounds on purpose; the emulator's guard page catches it.
        let e =
            unsafe { g.launch::<p::probe_store>(cfg(2, 32), (x.ptr_mut(), 200, 37)) }.unwrap_err();
        match &e {
            SimtError::Emulator(EmuError::MemoryFault {
                kernel,
                block,
                thread,
                detail,
                ..
            }) => {
                assert_eq!(*kernel, "probe_store");
                assert_eq!(
                    (block.x, thread.x),
                    (1, 5),
                    "global thread 37 = block 1, thread 5"
                );
                assert!(
                    detail.contains("400 bytes past the end of a 400-byte buffer"),
                    "{detail}"
                );
            }
            other => panic!("expected a memory fault, got {other}"),
        }
        assert!(e.to_string().contains("thread (5, 0, 0)"), "{e}");
        // The buffer and the Gpu are fine afterwards.
        assert_eq!(g.download(&x).unwrap(), vec![0.0; 100]);
        works(&g);
    }
}

#[test]
fn emulator_write_before_a_buffer_is_a_fault() {
    let g = emulator(Order::InOrder);
    let mut x = g.upload(&[0.0f32; 100]).unwrap();
    // 4096 bytes before the start: the leading guard page.
    let back = (-1024i64) as u64;
    // SAFETY: out of bounds on purpose.
    let e = unsafe { g.launch::<p::probe_store>(cfg(1, 32), (x.ptr_mut(), back, 3)) }.unwrap_err();
    match &e {
        SimtError::Emulator(EmuError::MemoryFault { thread, detail, .. }) => {
            assert_eq!(thread.x, 3);
            assert!(detail.contains("before the start"), "{detail}");
        }
        other => panic!("expected a memory fault, got {other}"),
    }
    works(&g);
}

#[test]
fn emulator_write_just_past_the_end_is_found_after_the_launch() {
    let g = emulator(Order::InOrder);
    let mut x = g.upload(&[0.0f32; 100]).unwrap();
    // Float 100 is byte 400: inside the 256-byte rounding, before the guard page.
    // SAFETY: out of bounds on purpose; the slack check after the launch finds it.
    let e = unsafe { g.launch::<p::probe_store>(cfg(1, 32), (x.ptr_mut(), 100, 0)) }.unwrap_err();
    match &e {
        SimtError::Emulator(EmuError::OutOfBounds { kernel, detail }) => {
            assert_eq!(*kernel, "probe_store");
            assert!(
                detail.contains("byte 0 past the end of a 400-byte buffer"),
                "{detail}"
            );
        }
        other => panic!("expected an out-of-bounds write, got {other}"),
    }
    // Reported once: the next launch is clean.
    // SAFETY: in bounds.
    unsafe { g.launch::<p::probe_store>(cfg(1, 32), (x.ptr_mut(), 99, 0)) }.unwrap();
    assert_eq!(g.download(&x).unwrap()[99], 1.0);
}

#[test]
fn emulator_kernel_panic_names_block_and_thread() {
    let g = emulator(Order::Reversed);
    let mut out = poisoned(&g, 128);
    // SAFETY: one float per thread.
    let e = unsafe { g.launch::<p::probe_trap>(cfg(4, 32), (out.ptr_mut(), 70)) }.unwrap_err();
    match &e {
        SimtError::Emulator(EmuError::Panic {
            kernel,
            block,
            thread,
            message,
        }) => {
            assert_eq!(*kernel, "probe_trap");
            assert_eq!((block.x, thread.x), (2, 6));
            assert!(message.contains("asserts on purpose"), "{message}");
        }
        other => panic!("expected a kernel panic, got {other}"),
    }
    works(&g);
}

#[test]
fn emulator_barrier_deadlock_is_an_error_not_a_hang() {
    let g = emulator(Order::Random(5));
    let mut out = poisoned(&g, 64);
    // SAFETY: one float per thread; threads >= 40 skip the barrier on purpose.
    let e = unsafe { g.launch::<p::probe_divergent_barrier>(cfg(1, 64), (out.ptr_mut(), 40)) }
        .unwrap_err();
    assert!(
        matches!(
            &e,
            SimtError::Emulator(EmuError::BarrierDivergence {
                kernel: "probe_divergent_barrier",
                ..
            })
        ),
        "{e}"
    );
    works(&g);
}

/// Allocation past the device's memory is `OutOfMemory` with the byte count, and the
/// device stays usable.
fn out_of_memory(g: &Gpu) {
    let total = g.mem_info().unwrap().total;
    let want = total + (1 << 30);
    match g.alloc::<u8>(want) {
        Err(SimtError::OutOfMemory { bytes, .. }) => assert_eq!(bytes, want),
        other => panic!("expected OutOfMemory for {want} bytes, got {other:?}"),
    }
    match g.alloc::<f32>(usize::MAX / 2) {
        Err(SimtError::OutOfMemory { .. }) => {}
        other => panic!("expected OutOfMemory for an overflowing size, got {other:?}"),
    }
    let e = g.alloc::<u8>(want).unwrap_err().to_string();
    assert!(
        e.contains(&want.to_string()) && e.contains("free buffers"),
        "{e}"
    );
    works(g);
}

#[test]
fn emulator_out_of_memory_is_typed() {
    out_of_memory(&emulator(Order::InOrder));
}

/// On the GPU, each fault (a trap, an illegal address) runs in a child process of
/// this test binary: out of memory first (typed, the Gpu goes on), then the fault
/// gives `KernelFault` naming the kernel, and every later call on that `Gpu` gives
/// `ContextLost`. CUDA keeps such a fault for the rest of the process (driver 580
/// refuses even a reset primary context), so a new `Gpu::cuda()` there must be
/// `ContextLost` too (or work, should a driver allow it); the parent, a new process,
/// then checks that the GPU works. On the emulator the faults are typed errors and
/// the same `Gpu` goes on.
#[test]
fn gpu_fault_then_recovery() {
    if let Ok(fault) = std::env::var("SIMT_FAULT_CHILD") {
        return fault_child(&fault);
    }
    let g = gpu();
    out_of_memory(&g);
    if g.kind() != BackendKind::Cuda {
        let mut out = poisoned(&g, 64);
        // SAFETY: one float per thread.
        let e = unsafe { g.launch::<p::probe_trap>(cfg(2, 32), (out.ptr_mut(), 3)) }.unwrap_err();
        assert!(
            matches!(e, SimtError::Emulator(EmuError::Panic { .. })),
            "{e}"
        );
        works(&g);
        return;
    }
    for fault in ["trap", "illegal address"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "gpu_fault_then_recovery",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SIMT_FAULT_CHILD", fault)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        for l in err.lines().filter(|l| l.starts_with("[fault]")) {
            eprintln!("{l}");
        }
        assert!(out.status.success(), "the {fault} child failed:\n{err}");
        assert!(
            err.contains("[fault] ok"),
            "the {fault} child did not finish:\n{err}"
        );
        // This process never faulted: its GPU works.
        works(&g);
    }
}

/// The child of [`gpu_fault_then_recovery`]: one fault on the GPU and what follows.
fn fault_child(fault: &str) {
    let g = gpu();
    assert_eq!(g.kind(), BackendKind::Cuda);
    let mut out = poisoned(&g, 64);
    works(&g);
    // SAFETY: one float per thread for probe_trap; probe_store's write lands 4 TiB
    // past the buffer on purpose (an illegal address).
    let launched = unsafe {
        if fault == "trap" {
            g.launch::<p::probe_trap>(cfg(2, 32), (out.ptr_mut(), 3))
        } else {
            g.launch::<p::probe_store>(cfg(2, 32), (out.ptr_mut(), 1 << 40, 3))
        }
    };
    let e = launched.and_then(|()| g.synchronize()).unwrap_err();
    let name = if fault == "trap" {
        "probe_trap"
    } else {
        "probe_store"
    };
    match &e {
        SimtError::KernelFault { kernels, .. } => assert!(kernels.contains(&name), "{fault}: {e}"),
        other => panic!("{fault}: expected KernelFault, got {other}"),
    }
    eprintln!("[fault] {fault}: {e}");
    // The context is gone: every call says so, none panics or hangs.
    let e = g.upload(&[1.0f32]).unwrap_err();
    assert!(matches!(e, SimtError::ContextLost(_)), "{e}");
    let e = g.download(&out).unwrap_err();
    assert!(matches!(e, SimtError::ContextLost(_)), "{e}");
    eprintln!("[fault] {fault}: the old Gpu then says: {e}");
    drop(out);
    drop(g);
    match rust_simt::Gpu::cuda() {
        Ok(fresh) => {
            rust_simt::ptx::load(&fresh).unwrap();
            works(&fresh);
            eprintln!("[fault] {fault}: a new Gpu in the same process works");
        }
        Err(e @ SimtError::ContextLost(_)) => {
            eprintln!("[fault] {fault}: a new Gpu in the same process: {e}")
        }
        Err(e) => panic!("{fault}: a new Gpu after the fault: expected ContextLost, got {e}"),
    }
    eprintln!("[fault] ok");
}
