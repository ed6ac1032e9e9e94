use torchvet_summary::cli::{run_to_string, SummaryArgs, SummaryFormat};
use torchvet_summary::{render_text, summarize, SummaryError};

const MODELS: &str = "../../resources/test/summary/models.py";

#[test]
fn text_and_json_of_the_fixture_models() {
    let source = std::fs::read_to_string(MODELS).expect("models.py");
    let cards = summarize(&source, None).expect("summarize");
    insta::assert_snapshot!("models_text", render_text(&cards, "models.py"));
    insta::assert_json_snapshot!("models_json", cards);
}

#[test]
fn seed_net_has_50_890_parameters() {
    let args = SummaryArgs {
        target: format!("{MODELS}::Net"),
        format: SummaryFormat::Text,
    };
    let out = run_to_string(&args).expect("runs");
    assert!(out.contains("fc1") && out.contains("50,240"), "{out}");
    assert!(out.contains("Total params: 50,890"), "{out}");
}

#[test]
fn runtime_sizes_are_question_marks() {
    let source = std::fs::read_to_string(MODELS).expect("models.py");
    let card = &summarize(&source, Some("CustomModel")).expect("summarize")[0];
    assert_eq!(card.total_params, None);
    assert_eq!(card.unknown_layers, 2);
    let text = render_text(std::slice::from_ref(card), "models.py");
    assert!(text.contains("fc1.weight  [?, ?]"), "{text}");
    assert!(text.contains("fc2.weight  [10, ?]"), "{text}");
    let cond = &summarize(&source, Some("Conditional")).expect("summarize")[0];
    let keys: Vec<String> = torchvet_summary::expected_state_dict(cond)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(keys.contains(&"blocks.*.weight".to_string()), "{keys:?}");
    assert!(keys.contains(&"bn.running_mean".to_string()), "{keys:?}");
    assert!(!keys.iter().any(|k| k.starts_with("drop")), "{keys:?}");
}

#[test]
fn errors_name_the_problem() {
    let source = std::fs::read_to_string(MODELS).expect("models.py");
    assert!(matches!(
        summarize(&source, Some("Nope")),
        Err(SummaryError::NoSuchClass(_))
    ));
    assert!(matches!(
        summarize("class A:\n    pass\n", Some("A")),
        Err(SummaryError::NotAModule(_))
    ));
    assert!(matches!(
        summarize("def f(:\n", None),
        Err(SummaryError::Parse { .. })
    ));
    assert!(run_to_string(&SummaryArgs {
        target: "/nonexistent.py".into(),
        format: SummaryFormat::Json
    })
    .is_err());
}

#[test]
fn hostile_inputs_terminate() {
    // Huge ranges, self-recursive classes, deep nesting: bounded, no panic.
    let src = r#"
import torch.nn as nn
class R(nn.Module):
    def __init__(self):
        super().__init__()
        self.me = R()
        self.big = nn.ModuleList([nn.Linear(2, 2) for _ in range(10**9)])
        x = 0
        for i in range(100000):
            for j in range(100000):
                x += 1
        self.fc = nn.Linear(x, 2)
        self.neg = nn.Linear(-3, 2)
"#;
    let cards = summarize(src, None).expect("summarize");
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].total_params, None);
}
