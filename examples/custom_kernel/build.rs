fn main() {
    simt_builder::Builder::new("kernels")
        .build()
        .unwrap_or_else(|e| panic!("\n{e}\n"));
}
