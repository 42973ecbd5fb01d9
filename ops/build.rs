//! Compiles the control API's protobuf with a pure-Rust protobuf compiler
//! (protox), so building needs no `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "src/control/control.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["src/control"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)?;
    Ok(())
}
