//! Use from several host threads: what `Gpu` and `Buffer` promise, checked.
//!
//! A `Gpu` is `Send` but not `Sync`: one per thread (each has its own stream on the
//! device, so threads run concurrently and each sees its own launches in order).
//! A `Buffer` is `Send` and `Sync`; using it with another thread's `Gpu` is
//! `WrongDevice`, never a wrong answer.
mod common;
use common::*;
use rust_simt::ops::gelu::gelu;
use rust_simt::ops::matmul::{matmul, Epilogue, MatmulKernel};
use rust_simt::ops::softmax::softmax;
use rust_simt::{reference, Buffer, Gpu, SimtError};

#[test]
fn the_promises_hold_at_compile_time() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Gpu>();
    send::<Buffer<f32>>();
    sync::<Buffer<f32>>();
    // `Gpu: !Sync` is pinned by a compile_fail doctest on `Gpu`.
}

/// One thread's work: softmax, matmul + ReLU and GeLU on its own inputs and its own
/// `Gpu`, each checked against float64; `rounds` times.
fn worker(id: u64, rounds: usize) {
    let g = gpu();
    let (mut r, seed) = rng(&format!("thread {id}"));
    for round in 0..rounds {
        let (rows, cols) = (3 + id as usize * 5 + round, 50 + 37 * id as usize);
        let x = uniform(&mut r, rows * cols, -4.0, 4.0);
        let xb = g.upload(&x).unwrap();
        let mut y = poisoned(&g, rows * cols);
        softmax(
            &g,
            xb.matrix(rows, cols).unwrap(),
            y.matrix_mut(rows, cols).unwrap(),
        )
        .unwrap();
        let (m, n, k) = (rows, 40 + id as usize, cols);
        let b = uniform(&mut r, k * n, -1.0, 1.0);
        let bb = g.upload(&b).unwrap();
        let mut c = poisoned(&g, m * n);
        matmul(
            &g,
            MatmulKernel::ALL[(id as usize + round) % MatmulKernel::ALL.len()],
            xb.matrix(m, k).unwrap(),
            bb.matrix(k, n).unwrap(),
            c.matrix_mut(m, n).unwrap(),
            Epilogue::Relu,
        )
        .unwrap();
        let mut z = poisoned(&g, rows * cols);
        gelu(&g, &xb, &mut z).unwrap();
        let what = format!("thread {id} round {round}");
        assert_close(
            &format!("{what} softmax"),
            seed,
            &g.download(&y).unwrap(),
            &reference::softmax(&x, rows, cols),
            1e-5,
            1e-7,
            1e-5,
        );
        assert_close(
            &format!("{what} matmul"),
            seed,
            &g.download(&c).unwrap(),
            &reference::matmul(&x, &b, m, n, k, k, n, true),
            1e-5,
            4.0 * matmul_atol(k),
            1e-5,
        );
        assert_close(
            &format!("{what} gelu"),
            seed,
            &g.download(&z).unwrap(),
            &reference::gelu_tanh(&x),
            2e-5,
            1e-6,
            1e-4,
        );
    }
}

#[test]
fn ops_from_several_threads_at_once() {
    let rounds = if rust_simt::full_size(&gpu()) { 20 } else { 4 };
    std::thread::scope(|s| {
        for id in 0..4 {
            s.spawn(move || worker(id, rounds));
        }
    });
}

#[test]
fn a_buffer_moves_between_threads_but_not_between_gpus() {
    let g = gpu();
    let x = g.upload(&[1.0f32, -2.0, 3.0]).unwrap();
    // Moved to another thread and back: still this Gpu's.
    let x = std::thread::spawn(move || x).join().unwrap();
    let mut y = poisoned(&g, 3);
    gelu(&g, &x, &mut y).unwrap();
    assert!(g.download(&y).unwrap().iter().all(|v| v.is_finite()));
    // Shared by reference with a thread that has its own Gpu: refused there.
    std::thread::scope(|s| {
        s.spawn(|| {
            let other = gpu();
            let mut z = poisoned(&other, 3);
            let e = gelu(&other, &x, &mut z).unwrap_err();
            assert!(matches!(e, SimtError::WrongDevice { .. }), "{e}");
        });
    });
    // Dropped on another thread: freed there, fine.
    std::thread::spawn(move || drop(x)).join().unwrap();
}
