//! The HTML report is well-formed XML, self-contained, and has one overview row per PE
//! for small runs and aggregated rows for 10^4 PEs.

mod common;

use std::sync::Arc;

use chorus_traces::{
    read_chrome, render_report, summarize, Collector, Names, Recorder, ReportOptions, TraceConfig,
};
use common::{record, scenario, scratch};

fn parse(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, opts).expect("report is well-formed XML")
}

/// Overview rows as (first PE, last PE).
fn rows(doc: &roxmltree::Document<'_>) -> Vec<(u32, u32)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("pe-row"))
        .map(|n| {
            let (a, b) = n.attribute("data-pes").unwrap().split_once('-').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

fn self_contained(doc: &roxmltree::Document<'_>) {
    for n in doc.descendants().filter(|n| n.is_element()) {
        assert!(!n.has_tag_name("script"), "no scripts");
        assert!(!n.has_tag_name("link"), "no external stylesheets");
        for a in n.attributes() {
            assert!(
                !a.value().contains("http://") && !a.value().contains("https://")
                    || a.name() == "xmlns",
                "external reference {}={}",
                a.name(),
                a.value()
            );
        }
    }
}

#[test]
fn small_run_has_one_row_per_pe() {
    let s = scenario(8, 2_000, 3);
    let out = scratch("report_small").join("t.json");
    let mut config = TraceConfig::new(&out);
    config.flow_every = 4;
    record(&s, config).write_chrome(&s.names, &out).unwrap();
    let trace = read_chrome(&out).unwrap();
    let sum = summarize(&trace, 40);
    for exact in [true, false] {
        let opts = ReportOptions {
            max_exact_slices: if exact { usize::MAX } else { 0 },
            ..ReportOptions::default()
        };
        let html = render_report(&trace, &sum, &opts);
        let doc = parse(&html);
        self_contained(&doc);
        assert_eq!(rows(&doc), (0..8).map(|p| (p, p)).collect::<Vec<_>>());
        let svgs: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("svg"))
            .filter_map(|n| n.attribute("class"))
            .collect();
        assert_eq!(
            svgs,
            ["overview", "usage", "time-profile", "heat-map", "sizes"]
        );
        let rows_of = |class: &str| {
            doc.descendants()
                .filter(|n| n.has_tag_name("table") && n.attribute("class") == Some(class))
                .flat_map(|t| t.descendants().filter(|n| n.has_tag_name("tr")))
                .count()
        };
        assert_eq!(rows_of("entries"), sum.entries.len() + 1);
        assert!(
            rows_of("critical-path") >= 2,
            "a header and at least one entry"
        );
        let heat_rows = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("heat-row"))
            .count();
        assert_eq!(heat_rows, 8);
        let text: String = doc
            .descendants()
            .filter(|n| n.is_text())
            .map(|n| n.text().unwrap())
            .collect();
        for e in &sum.entries {
            assert!(text.contains(&e.name));
        }
        let rects = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
        assert!(rects > 8);
    }
}

#[test]
fn ten_thousand_pes_aggregate_rows() {
    const PES: u32 = 10_000;
    let out = scratch("report_large").join("t.json");
    let mut config = TraceConfig::new(&out);
    config.buffer_events = 8;
    config.process_label = "node group".to_owned();
    let sink = Arc::new(Collector::new(config).unwrap());
    let names = Names::new();
    let work = names.intern("Cell::step");
    for pe in 0..PES {
        // Busy fraction grows with the PE number, so rows shade differently.
        let mut r = Recorder::new(pe, pe / 64, sink.clone());
        let busy = 100 + u64::from(pe) % 900;
        r.entry_begin(0, work, pe, 0, None);
        r.send(busy / 2, u64::from((pe + 1) % PES), (pe + 1) % PES, 16);
        r.entry_end(busy);
        r.idle_begin(busy);
        r.idle_end(1_000);
        r.entry_begin(1_000, work, (pe + PES - 1) % PES, 16, Some(u64::from(pe)));
        r.entry_end(1_000 + busy / 4);
        r.finish();
    }
    let stats = sink.write_chrome(&names, &out).unwrap();
    assert_eq!(stats.pes, PES as usize);
    assert_eq!(stats.flows, u64::from(PES));
    let trace = read_chrome(&out).unwrap();
    assert_eq!(trace.tracks.len(), PES as usize);
    assert_eq!(
        trace.tracks[0].process_name.as_deref(),
        Some("node group 0")
    );
    let sum = summarize(&trace, 50);
    let html = render_report(&trace, &sum, &ReportOptions::default());
    let doc = parse(&html);
    self_contained(&doc);
    let rows = rows(&doc);
    assert!(rows.len() > 128 && rows.len() <= 256, "{} rows", rows.len());
    // Rows are consecutive PE ranges covering every PE once.
    assert_eq!(rows[0].0, 0);
    assert_eq!(rows.last().unwrap().1, PES - 1);
    for w in rows.windows(2) {
        assert_eq!(w[1].0, w[0].1 + 1);
    }
    assert!(html.len() < 5_000_000, "report is {} bytes", html.len());
}
