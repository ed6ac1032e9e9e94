use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::ExprCall;
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for training scripts that build convolution layers (`nn.Conv*`, or torchvision
    /// classification models), train them on CUDA (`.cuda()` / `torch.device("cuda")`, with
    /// `backward()` and an optimizer `step()`), and never set
    /// `torch.backends.cudnn.benchmark` (or `cudnn.deterministic` /
    /// `torch.use_deterministic_algorithms`).
    ///
    /// ## Why is this bad?
    /// With `cudnn.benchmark = True`, cuDNN times its convolution algorithms for each new input
    /// shape and keeps the fastest; with fixed input sizes (image classification,
    /// segmentation at one resolution) this often makes each step noticeably faster. It is
    /// off by default.
    ///
    /// This is contested advice, so the rule is informational and in preview: with input
    /// shapes that change every batch (detection, variable-length sequences) benchmarking
    /// re-runs for every new shape and can be slower, and it makes runs less reproducible.
    /// Files using recurrent layers, embeddings, torchvision detection models, Hugging Face
    /// models or Lightning (which has its own `benchmark` flag) stay silent, as do files that
    /// set either cuDNN flag.
    ///
    /// ## Example
    /// ```python
    /// model = ResNet().cuda()
    /// train(model)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch.backends.cudnn.benchmark = True
    /// model = ResNet().cuda()
    /// train(model)
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `torch.backends.cudnn.benchmark = True` after the imports. It is
    /// unsafe: it helps only when input shapes are fixed, and it changes which convolution
    /// algorithms run (results are no longer bit-for-bit reproducible).
    ///
    /// ## References
    /// - [Performance tuning guide: enable cuDNN auto-tuner](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-cudnn-auto-tuner)
    /// - [What does torch.backends.cudnn.benchmark do?](https://discuss.pytorch.org/t/what-does-torch-backends-cudnn-benchmark-do/5936)
    pub(crate) static CUDNN_BENCHMARK_NOT_ENABLED = {
        name: "cudnn-benchmark-not-enabled",
        code: "TV114",
        group: Performance,
        severity: Info,
        title: "Fixed-shape conv training without torch.backends.cudnn.benchmark = True",
        autofix: Suggest,
        preview: true,
        hooks: { end: check_end },
    };
}

/// Calls that mean variable input shapes (or a framework that owns the setting).
fn variable_shapes(q: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "torch.nn.LSTM",
        "torch.nn.GRU",
        "torch.nn.RNN",
        "torch.nn.Embedding",
        "torch.nn.Transformer",
        "torch.nn.MultiheadAttention",
        "torch.nn.utils.rnn.",
        "torchvision.models.detection.",
        "torchvision.models.segmentation.",
        "torchvision.models.video.",
        "torchvision.models.optical_flow.",
        "transformers.",
        "lightning.",
        "pytorch_lightning.",
        "accelerate.",
        "ultralytics.",
        "detectron2.",
        "mmdet.",
    ];
    PREFIXES.iter().any(|p| q.starts_with(p))
}

/// Is this a convolution constructor or a torchvision classification builder?
fn is_conv(q: &str) -> bool {
    if let Some(rest) = q.strip_prefix("torch.nn.") {
        return rest.starts_with("Conv") || rest.starts_with("LazyConv");
    }
    if let Some(rest) = q.strip_prefix("torchvision.models.") {
        return !rest.contains('.') && rest.starts_with(|c: char| c.is_ascii_lowercase());
    }
    false
}

fn first(calls: &[&ExprCall]) -> Option<TextRange> {
    calls.iter().map(|c| c.range()).min_by_key(|r| r.start())
}

fn check_end(checker: &mut Checker) {
    let facts = &checker.facts;
    if facts.method_calls_of("backward").is_empty() || facts.method_calls_of("step").is_empty() {
        return;
    }
    let text = &checker.source.text;
    if [
        "cudnn.benchmark",
        "cudnn.deterministic",
        "use_deterministic_algorithms",
        "benchmark=",
    ]
    .iter()
    .any(|s| text.contains(s))
    {
        return;
    }
    if facts.any_call(variable_shapes) {
        return;
    }
    let Some(conv) = facts
        .calls
        .iter()
        .filter(|(q, _)| is_conv(q))
        .filter_map(|(_, calls)| first(calls))
        .min_by_key(|r| r.start())
    else {
        return;
    };
    let cuda_device = facts
        .calls_of("torch.device")
        .iter()
        .filter(|c| {
            c.arguments
                .args
                .first()
                .and_then(helpers::str_value)
                .is_some_and(|s| s.starts_with("cuda"))
                || c.arguments.args.first().is_some_and(|a| {
                    matches!(a, ruff_python_ast::Expr::If(i) if helpers::str_value(&i.body).is_some_and(|s| s.starts_with("cuda")))
                })
        })
        .copied()
        .collect::<Vec<_>>();
    let Some(cuda) = first(facts.method_calls_of("cuda")).or_else(|| first(&cuda_device)) else {
        return;
    };
    let fix = checker.module_alias("torch").map(|t| {
        RawFix::unsafe_edit(
            format!("Add `{t}.backends.cudnn.benchmark = True` after the imports"),
            vec![checker.add_import_edit(&format!("{t}.backends.cudnn.benchmark = True"))],
        )
    });
    let d = checker.report(
        conv,
        "this convolutional model trains on CUDA without `torch.backends.cudnn.benchmark = True`: with fixed input shapes cuDNN's auto-tuner usually picks faster convolution algorithms",
    );
    d.add_related(cuda, "moved to CUDA here");
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

#[cfg(test)]
mod tests {

    fn count(src: &str) -> usize {
        crate::test_support::count_findings("cudnn-benchmark-not-enabled", src)
    }

    const TRAIN: &str = concat!(
        "import torch\n",
        "from torch import nn\n",
        "model = nn.Sequential(nn.Conv2d(3, 8, 3)).cuda()\n",
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "loss = model(x).sum()\n",
        "loss.backward()\n",
        "opt.step()\n",
    );

    #[test]
    fn fires_on_conv_training_on_cuda() {
        assert_eq!(count(TRAIN), 1);
    }

    #[test]
    fn either_cudnn_flag_silences() {
        assert_eq!(
            count(&format!("{TRAIN}torch.backends.cudnn.benchmark = False\n")),
            0
        );
        assert_eq!(
            count(&format!(
                "{TRAIN}torch.backends.cudnn.deterministic = True\n"
            )),
            0
        );
    }

    #[test]
    fn variable_shapes_and_cpu_only_stay_silent() {
        assert_eq!(count(&format!("{TRAIN}rnn = nn.LSTM(8, 8)\n")), 0);
        assert_eq!(count(&TRAIN.replace(".cuda()", "")), 0);
    }
}
