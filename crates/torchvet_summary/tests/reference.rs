//! Parameter counts and state_dict shapes compared with PyTorch's own numbers
//! (`resources/test/summary/reference.json`, written by `gen_reference.py` with torch).

use torchvet_summary::{expected_state_dict, summarize};

fn reference() -> serde_json::Value {
    let text = std::fs::read_to_string("../../resources/test/summary/reference.json")
        .expect("reference.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn torch_state(v: &serde_json::Value) -> Vec<(String, Option<Vec<u64>>)> {
    v.as_array()
        .expect("state_dict array")
        .iter()
        .map(|e| {
            let key = e[0].as_str().expect("key").to_string();
            let shape = e[1]
                .as_array()
                .expect("shape")
                .iter()
                .map(|d| d.as_u64().expect("dim"))
                .collect();
            (key, Some(shape))
        })
        .collect()
}

#[test]
fn every_layer_matches_pytorch() {
    let r = reference();
    let layers = r["layers"].as_array().expect("layers");
    assert!(layers.len() >= 60);
    let mut failures = Vec::new();
    for entry in layers {
        let expr = entry["expr"].as_str().expect("expr");
        let source = format!(
            "import torch\nimport torch.nn as nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layer = {expr}\n"
        );
        let cards = summarize(&source, Some("M")).expect("summarize");
        let card = &cards[0];
        let want_params = entry["params"].as_u64().expect("params");
        let want_state = torch_state(&entry["state_dict"]);
        let got_state: Vec<(String, Option<Vec<u64>>)> = expected_state_dict(card)
            .into_iter()
            .map(|(k, s)| (k.strip_prefix("layer.").unwrap_or(&k).to_string(), s))
            .collect();
        if card.total_params != Some(want_params) || got_state != want_state {
            failures.push(format!(
                "{expr}: params {:?} (torch {want_params}); state_dict\n  ours:  {got_state:?}\n  torch: {want_state:?}",
                card.total_params
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn fixture_models_match_pytorch() {
    let r = reference();
    let source =
        std::fs::read_to_string("../../resources/test/summary/models.py").expect("models.py");
    let models = r["models"].as_object().expect("models");
    assert!(models.len() >= 10);
    let mut failures = Vec::new();
    for (name, entry) in models {
        let cards = summarize(&source, Some(name)).expect("summarize");
        let card = &cards[0];
        let want_params = entry["params"].as_u64().expect("params");
        let want_state = torch_state(&entry["state_dict"]);
        let got_state = expected_state_dict(card);
        if card.total_params != Some(want_params) || got_state != want_state {
            failures.push(format!(
                "{name}: params {:?} (torch {want_params})\n  ours:  {got_state:?}\n  torch: {want_state:?}",
                card.total_params
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
