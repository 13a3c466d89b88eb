//! Sets the linker flags a Node addon needs (napi symbols resolved by the loading process).
fn main() {
    napi_build::setup();
}
