//! docs/driver-api.md is generated from the driver table and the shim's exports; this test fails
//! when it is out of date. `UPDATE_DOCS=1` rewrites it.

#[test]
fn driver_api_table_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/driver-api.md");
    let table = cuda::implementation_table();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v != "0") {
        std::fs::write(&path, &table).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == table,
        "docs/driver-api.md is out of date: run `UPDATE_DOCS=1 cargo test --release -p cuda-shim --test driver_api_doc`"
    );
}
