//! The repo-local `uniffi-bindgen`: the generator pinned to the library's uniffi version, so the
//! generated Swift always matches the scaffolding compiled into `librobota_swift`.

fn main() {
    uniffi::uniffi_bindgen_main()
}
