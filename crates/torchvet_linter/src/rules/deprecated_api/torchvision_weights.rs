//! The weights `pretrained=True` / `pretrained_backbone=True` selected in each torchvision
//! model builder, read from `data/torchvision_weights.tsv`. That table is generated from
//! torchvision's own registry (`@register_model` + `@handle_legacy_interface`) by
//! `data/gen_torchvision_weights.py`; see that script for how to regenerate it.
use std::sync::OnceLock;

const TABLE: &str = include_str!("../../../data/torchvision_weights.tsv");

/// One builder argument of the legacy interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LegacyWeights {
    /// Package of `torchvision.models` that exports the builder ("" = the root).
    pub(crate) builder_package: &'static str,
    /// Module that defines the builder (`segmentation.deeplabv3`).
    pub(crate) builder_module: &'static str,
    /// Builder name.
    pub(crate) builder: &'static str,
    /// `pretrained` or `pretrained_backbone`.
    pub(crate) legacy_param: &'static str,
    /// `weights` or `weights_backbone`.
    pub(crate) new_param: &'static str,
    /// The enum member `True` selected (package, `Enum.MEMBER`); `None` when the builder has
    /// no weights (`True` raises).
    pub(crate) weights: Option<(&'static str, &'static str)>,
    /// With `quantize=True`, for quantizable builders.
    pub(crate) quantized: Option<(&'static str, &'static str)>,
}

fn package(p: &'static str) -> &'static str {
    if p == "." {
        ""
    } else {
        p
    }
}

fn member(pkg: &'static str, m: &'static str) -> Option<(&'static str, &'static str)> {
    (m != "-" && pkg != "-").then(|| (package(pkg), m))
}

/// Every row of the table.
pub(crate) fn table() -> &'static [LegacyWeights] {
    static ROWS: OnceLock<Vec<LegacyWeights>> = OnceLock::new();
    ROWS.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let c: Vec<&'static str> = l.split('\t').collect();
                let [bp, bm, b, lp, np, ep, e, qp, q] = c.as_slice() else {
                    return None;
                };
                Some(LegacyWeights {
                    builder_package: package(bp),
                    builder_module: bm,
                    builder: b,
                    legacy_param: lp,
                    new_param: np,
                    weights: member(ep, e),
                    quantized: member(qp, q),
                })
            })
            .collect()
    })
}

/// The legacy entry of `legacy_param` for the builder whose qualified name is
/// `torchvision.models.<rest>` (`resnet50`, `resnet.resnet152`,
/// `segmentation.deeplabv3_resnet50`, `quantization.resnet50`).
pub(crate) fn lookup(rest: &str, legacy_param: &str) -> Option<&'static LegacyWeights> {
    let (prefix, name) = match rest.rsplit_once('.') {
        Some((p, n)) => (p, n),
        None => ("", rest),
    };
    table().iter().find(|row| {
        row.builder == name
            && row.legacy_param == legacy_param
            && (row.builder_package == prefix || row.builder_module == prefix)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_table_answers_what_pretrained_meant() {
        assert!(table().len() > 100);
        let r = lookup("resnet50", "pretrained").unwrap();
        assert_eq!(r.weights, Some(("", "ResNet50_Weights.IMAGENET1K_V1")));
        assert_eq!(
            lookup("resnet.resnet152", "pretrained").unwrap().weights,
            Some(("", "ResNet152_Weights.IMAGENET1K_V1"))
        );
        let seg = lookup("segmentation.deeplabv3_resnet50", "pretrained").unwrap();
        assert_eq!(
            seg.weights,
            Some((
                "segmentation",
                "DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1"
            ))
        );
        let bb = lookup(
            "detection.ssdlite320_mobilenet_v3_large",
            "pretrained_backbone",
        )
        .unwrap();
        assert_eq!(bb.new_param, "weights_backbone");
        assert_eq!(
            bb.weights,
            Some(("", "MobileNet_V3_Large_Weights.IMAGENET1K_V1"))
        );
        let q = lookup("quantization.resnet50", "pretrained").unwrap();
        assert_eq!(
            q.quantized,
            Some((
                "quantization",
                "ResNet50_QuantizedWeights.IMAGENET1K_FBGEMM_V1"
            ))
        );
        assert_eq!(lookup("vit_h_14", "pretrained").unwrap().weights, None);
        assert!(lookup("not_a_builder", "pretrained").is_none());
        // `resnet50` of the root package is not the quantized one.
        assert_eq!(lookup("resnet50", "pretrained").unwrap().quantized, None);
    }
}
