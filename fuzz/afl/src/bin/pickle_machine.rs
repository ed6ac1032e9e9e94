//! AFL target: the symbolic pickle machine, slice against stream (see
//! `torchvet_checkpoint::testing::fuzz_pickle_machine`).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        torchvet_checkpoint::testing::fuzz_pickle_machine(data);
    });
}
