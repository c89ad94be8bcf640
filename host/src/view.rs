//! Matrix views over buffers: shape and row stride, checked once when made.
//!
//! Ops take views instead of `(buffer, rows, cols, ld)` argument lists: one entry
//! point per op whether the matrix is contiguous or a strided slice of a larger one.
//! A view may start at an element `offset` into its buffer ([`Buffer::matrix_at`]):
//! a sub-matrix, or a deliberately misaligned start (the ops take any alignment).
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
        self.check_at(what, 0, len)
    }
    /// `ld >= cols` and a buffer of `len` elements holds it from element `offset` on.
    pub fn check_at(&self, what: &str, offset: usize, len: usize) -> Result<()> {
        if self.ld < self.cols {
            return Err(SimtError::Shape {
                op: "view",
                detail: format!(
                    "{what}: row stride {} is less than its {} columns",
                    self.ld, self.cols
                ),
            });
        }
        if offset > len || len - offset < self.min_len() {
            return Err(SimtError::Shape {
                op: "view",
                detail: format!("{what}: a {}x{} view with row stride {} needs {} elements from element {offset}, the buffer has {len}", self.rows, self.cols, self.ld, self.min_len()),
            });
        }
        Ok(())
    }
}

/// A read-only matrix view of a [`Buffer`].
#[derive(Clone, Copy, Debug)]
pub struct MatrixRef<'a, T: DeviceCopy> {
    buf: &'a Buffer<T>,
    offset: usize,
    layout: Layout,
}

/// A writable matrix view of a [`Buffer`].
#[derive(Debug)]
pub struct MatrixMut<'a, T: DeviceCopy> {
    buf: &'a mut Buffer<T>,
    offset: usize,
    layout: Layout,
}

impl<'a, T: DeviceCopy> MatrixRef<'a, T> {
    /// A view with `layout`, checked against the buffer's length.
    pub fn new(buf: &'a Buffer<T>, layout: Layout) -> Result<Self> {
        Self::new_at(buf, 0, layout)
    }
    /// A view with `layout` whose element (0, 0) is element `offset` of the buffer.
    pub fn new_at(buf: &'a Buffer<T>, offset: usize, layout: Layout) -> Result<Self> {
        layout.check_at("matrix", offset, buf.len())?;
        Ok(MatrixRef {
            buf,
            offset,
            layout,
        })
    }
    /// The element of the buffer where (0, 0) lies.
    pub fn offset(&self) -> usize {
        self.offset
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
        offset_ptr(self.buf.ptr(), self.offset)
    }
}

impl<'a, T: DeviceCopy> MatrixMut<'a, T> {
    /// A view with `layout`, checked against the buffer's length.
    pub fn new(buf: &'a mut Buffer<T>, layout: Layout) -> Result<Self> {
        Self::new_at(buf, 0, layout)
    }
    /// A view with `layout` whose element (0, 0) is element `offset` of the buffer.
    pub fn new_at(buf: &'a mut Buffer<T>, offset: usize, layout: Layout) -> Result<Self> {
        layout.check_at("matrix", offset, buf.len())?;
        Ok(MatrixMut {
            buf,
            offset,
            layout,
        })
    }
    /// The element of the buffer where (0, 0) lies.
    pub fn offset(&self) -> usize {
        self.offset
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
        offset_ptr(self.buf.ptr(), self.offset) as *mut T
    }
    /// The same view for a shorter borrow: pass it to a call and keep this one.
    pub fn reborrow(&mut self) -> MatrixMut<'_, T> {
        MatrixMut {
            buf: self.buf,
            offset: self.offset,
            layout: self.layout,
        }
    }
    /// A read-only view of the same elements.
    pub fn as_ref(&self) -> MatrixRef<'_, T> {
        MatrixRef {
            buf: self.buf,
            offset: self.offset,
            layout: self.layout,
        }
    }
}

/// `p` advanced by `offset` elements, as a device address (never dereferenced here;
/// an empty buffer's null pointer stays null at offset 0).
fn offset_ptr<T>(p: *const T, offset: usize) -> *const T {
    (p as usize).wrapping_add(offset * std::mem::size_of::<T>()) as *const T
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
    /// This buffer from element `offset` on as a `layout` matrix: a sub-matrix, or a
    /// start that is not 16-byte aligned.
    pub fn matrix_at(&self, offset: usize, layout: Layout) -> Result<MatrixRef<'_, T>> {
        MatrixRef::new_at(self, offset, layout)
    }
    /// This buffer from element `offset` on as a writable `layout` matrix.
    pub fn matrix_mut_at(&mut self, offset: usize, layout: Layout) -> Result<MatrixMut<'_, T>> {
        MatrixMut::new_at(self, offset, layout)
    }
}
