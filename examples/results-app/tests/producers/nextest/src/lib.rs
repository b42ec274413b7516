//! cargo-nextest's side of the fixtures: a pass, a failure, an ignored test and a test that
//! passes on its second attempt (`retries = 2` in .config/nextest.toml).

#[cfg(test)]
mod storage {
    #[test]
    fn put() {
        assert_eq!(1 + 1, 2);
    }

    #[test]
    fn get() {
        assert_eq!(2 * 2, 5, "get returned the wrong record");
    }

    #[test]
    #[ignore = "needs the network"]
    fn offline() {}

    #[test]
    fn flaky() {
        let state = std::path::PathBuf::from(std::env::var("PRODUCERS_STATE").unwrap()).join("nextest-flaky");
        let first = !state.exists();
        std::fs::write(&state, "ran").unwrap();
        assert!(!first, "first attempt fails");
    }
}
