//! AFL target: the Python/notebook front end (decode, notebook JSON, parse, positions).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        torchvet_afl::python_front_end(data);
    });
}
