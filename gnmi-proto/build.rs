//! Compiles the gNMI protobufs with a pure-Rust protobuf compiler (protox),
//! so building needs no `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/gnmi.proto", "proto/gnmi_ext.proto"];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)?;
    Ok(())
}
