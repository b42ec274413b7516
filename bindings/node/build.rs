fn main() {
    // Link flags for a Node addon (its napi symbols are resolved when Node loads it).
    napi_build::setup();
}
