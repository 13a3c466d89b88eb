// The demo project the `robota` CLI example explores (it is read, never built).
fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "world".into());
    println!("Hello, {name}!");
}
