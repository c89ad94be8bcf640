//! Device buffers that know their device.
//!
//! A [`Buffer`] holds an `Arc` of the device it was allocated on (as cudarc's
//! `CudaSlice` holds its stream): it frees itself there, keeps the device alive
//! while it lives, and every safe op checks it against the `Gpu` it runs on
//! ([`Gpu::check`](crate::Gpu::check)), so a CUDA buffer handed to an emulator `Gpu`
//! (or the reverse) is [`SimtError::WrongDevice`](crate::SimtError::WrongDevice),
//! never a host dereference of a device address.
use std::marker::PhantomData;
use std::sync::Arc;

use cust::memory::DeviceCopy;

use crate::gpu::Device;

/// `len` elements of `T` in device memory (256-byte aligned host memory on the
/// emulator). Made by [`Gpu::alloc`](crate::Gpu::alloc) or
/// [`Gpu::upload`](crate::Gpu::upload).
pub struct Buffer<T: DeviceCopy> {
    pub(crate) dev: Arc<Device>,
    pub(crate) ptr: u64,
    pub(crate) len: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T: DeviceCopy> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// The device address of element 0, for kernel arguments (null when empty).
    pub fn ptr(&self) -> *const T {
        self.ptr as usize as *const T
    }
    /// The device address of element 0, for kernel arguments that are written.
    pub fn ptr_mut(&mut self) -> *mut T {
        self.ptr as usize as *mut T
    }
    /// The identity of the device it lives on (what [`Gpu::check`](crate::Gpu::check) compares).
    pub fn device_id(&self) -> u64 {
        self.dev.id
    }
}

impl<T: DeviceCopy> Drop for Buffer<T> {
    fn drop(&mut self) {
        // SAFETY: allocated by this device's backend with exactly these bytes, freed once.
        unsafe { self.dev.backend.free(self.ptr, self.bytes()) };
    }
}

impl<T: DeviceCopy> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Buffer<{}>[{}] on device #{}",
            std::any::type_name::<T>(),
            self.len,
            self.dev.id
        )
    }
}
