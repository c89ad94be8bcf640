//! Matrix views over buffers: shape and row stride, checked once when made.
//!
//! Ops take views instead of `(buffer, rows, cols, ld)` argument lists: one entry
//! point per op whether the matrix is contiguous or a strided slice of a larger one.
//! A view is always in bounds of its buffer; a zero-sized view (`rows` or `cols`
//! 0) is valid and needs no elements.
use cust::memory::DeviceCopy;

use crate::buffer::Buffer;
use crate::error::{Result, SimtError};

/// A row-major matrix layout: `rows x cols`, consecutive rows `ld` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
}

impl Layout {
    /// A contiguous `rows x cols` matrix (`ld = cols`).
    pub const fn contiguous(rows: usize, cols: usize) -> Layout {
        Layout {
            rows,
            cols,
            ld: cols,
        }
    }
    /// `rows x cols` with row stride `ld`.
    pub const fn strided(rows: usize, cols: usize, ld: usize) -> Layout {
        Layout { rows, cols, ld }
    }
    /// Elements a buffer needs to hold this view (0 when empty).
    pub fn min_len(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1)
                .saturating_mul(self.ld)
                .saturating_add(self.cols)
        }
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }
    /// Whether rows follow each other without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.ld == self.cols || self.rows <= 1
    }
    /// `ld >= cols` and a buffer of `len` elements holds it.
    pub fn check(&self, what: &str, len: usize) -> Result<()> {
        if self.ld < self.cols {
            return Err(SimtError::Shape {
                op: "view",
                detail: format!(
                    "{what}: row stride {} is less than its {} columns",
                    self.ld, self.cols
                ),
            });
        }
        if len < self.min_len() {
            return Err(SimtError::Shape {
                op: "view",
                detail: format!("{what}: a {}x{} view with row stride {} needs {} elements, the buffer has {len}", self.rows, self.cols, self.ld, self.min_len()),
            });
        }
        Ok(())
    }
}

/// A read-only matrix view of a [`Buffer`].
#[derive(Clone, Copy, Debug)]
pub struct MatrixRef<'a, T: DeviceCopy> {
    buf: &'a Buffer<T>,
    layout: Layout,
}

/// A writable matrix view of a [`Buffer`].
#[derive(Debug)]
pub struct MatrixMut<'a, T: DeviceCopy> {
    buf: &'a mut Buffer<T>,
    layout: Layout,
}

impl<'a, T: DeviceCopy> MatrixRef<'a, T> {
    /// A view with `layout`, checked against the buffer's length.
    pub fn new(buf: &'a Buffer<T>, layout: Layout) -> Result<Self> {
        layout.check("matrix", buf.len())?;
        Ok(MatrixRef { buf, layout })
    }
    pub fn buffer(&self) -> &'a Buffer<T> {
        self.buf
    }
    pub fn layout(&self) -> Layout {
        self.layout
    }
    pub fn rows(&self) -> usize {
        self.layout.rows
    }
    pub fn cols(&self) -> usize {
        self.layout.cols
    }
    pub fn ld(&self) -> usize {
        self.layout.ld
    }
    /// Device address of element (0, 0).
    pub fn ptr(&self) -> *const T {
        self.buf.ptr()
    }
}

impl<'a, T: DeviceCopy> MatrixMut<'a, T> {
    /// A view with `layout`, checked against the buffer's length.
    pub fn new(buf: &'a mut Buffer<T>, layout: Layout) -> Result<Self> {
        layout.check("matrix", buf.len())?;
        Ok(MatrixMut { buf, layout })
    }
    pub fn buffer(&self) -> &Buffer<T> {
        self.buf
    }
    pub fn layout(&self) -> Layout {
        self.layout
    }
    pub fn rows(&self) -> usize {
        self.layout.rows
    }
    pub fn cols(&self) -> usize {
        self.layout.cols
    }
    pub fn ld(&self) -> usize {
        self.layout.ld
    }
    /// Device address of element (0, 0).
    pub fn ptr_mut(&mut self) -> *mut T {
        self.buf.ptr_mut()
    }
    /// A read-only view of the same elements.
    pub fn as_ref(&self) -> MatrixRef<'_, T> {
        MatrixRef {
            buf: self.buf,
            layout: self.layout,
        }
    }
}

impl<T: DeviceCopy> Buffer<T> {
    /// This buffer as a contiguous `rows x cols` matrix.
    pub fn matrix(&self, rows: usize, cols: usize) -> Result<MatrixRef<'_, T>> {
        MatrixRef::new(self, Layout::contiguous(rows, cols))
    }
    /// This buffer as a `layout` matrix (row stride `layout.ld`).
    pub fn matrix_strided(&self, layout: Layout) -> Result<MatrixRef<'_, T>> {
        MatrixRef::new(self, layout)
    }
    /// This buffer as a writable contiguous `rows x cols` matrix.
    pub fn matrix_mut(&mut self, rows: usize, cols: usize) -> Result<MatrixMut<'_, T>> {
        MatrixMut::new(self, Layout::contiguous(rows, cols))
    }
    /// This buffer as a writable `layout` matrix.
    pub fn matrix_mut_strided(&mut self, layout: Layout) -> Result<MatrixMut<'_, T>> {
        MatrixMut::new(self, layout)
    }
}
