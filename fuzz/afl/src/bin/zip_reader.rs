//! AFL target: the zip reader and the scanner over archives (see
//! `torchvet_checkpoint::testing::fuzz_zip_reader`).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        torchvet_checkpoint::testing::fuzz_zip_reader(data);
    });
}
