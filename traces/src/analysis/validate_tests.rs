//! The checker on hand-made traces: one good, and one for each way viewers misdraw.

use super::{check, Rule};
use crate::analysis::read::parse_chrome;
use std::path::Path;

const META: &str = r#"{"ph":"M","name":"thread_name","pid":0,"tid":0,"args":{"name":"PE 0"}},
{"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"PE 1"}}"#;

/// A trace of `events` (JSON objects, comma-separated) after the track names.
fn trace(events: &str) -> crate::Trace {
    let text = format!("{{\"traceEvents\":[{META},\n{events}],\"displayTimeUnit\":\"ns\"}}");
    parse_chrome(&text, Path::new("hand-made.json")).expect("hand-made trace parses")
}

fn x(tid: u32, cat: &str, name: &str, ts: &str, dur: &str, args: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":0,"tid":{tid},"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

fn flow(ph: char, tid: u32, id: &str, ts: &str) -> String {
    let bp = if ph == 'f' { r#","bp":"e""# } else { "" };
    format!(
        r#"{{"ph":"{ph}","cat":"msg","name":"msg","id":"{id}","pid":0,"tid":{tid},"ts":{ts}{bp}}}"#
    )
}

/// PE 0 sends message 0x7 from inside an entry; PE 1 idles, then handles it. Holder
/// slices (cat `msg`) start exactly at each flow event, strictly inside the entries.
fn good_events() -> Vec<String> {
    vec![
        x(0, "entry", "A::go", "1.000", "1.000", ""),
        x(0, "msg", "send", "1.500", "0.001", ""),
        flow('s', 0, "0x7", "1.500"),
        x(1, "idle", "idle", "0.000", "3.000", ""),
        x(1, "entry", "B::got", "3.000", "1.000", r#""msg_id":7"#),
        x(1, "msg", "recv", "3.001", "0.001", ""),
        flow('f', 1, "0x7", "3.001"),
    ]
}

fn rules_of(events: &[String]) -> Vec<Rule> {
    let r = check(&trace(&events.join(",\n")));
    r.counts.keys().copied().collect()
}

#[test]
fn a_trace_every_viewer_binds_passes() {
    let r = check(&trace(&good_events().join(",\n")));
    assert!(r.ok(), "{:?}", r.problems);
    assert_eq!((r.flows, r.misbound_flows), (1, 0));
}

#[test]
fn a_flow_end_at_the_entry_start_touches_idle() {
    // The old scheme: `f` at the entry's start, which is also idle's end; no holder.
    let mut e = good_events();
    e.truncate(5);
    e.push(flow('f', 1, "0x7", "3.000"));
    let r = check(&trace(&e.join(",\n")));
    assert_eq!(r.misbound_flows, 1);
    assert!(r.counts.contains_key(&Rule::FlowUnbound));
    assert!(r.counts.contains_key(&Rule::FlowAtBoundary));
    let text = r
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect::<Vec<_>>();
    assert!(
        text.iter()
            .any(|m| m.contains("'idle' (idle) [0, 3000] ns")),
        "names the idle slice: {text:?}"
    );
}

#[test]
fn zero_length_slices_are_reported() {
    let mut e = good_events();
    e[4] = x(1, "entry", "B::got", "3.000", "0", r#""msg_id":7"#);
    e[5] = x(1, "msg", "recv", "3.000", "0", "");
    e[6] = flow('f', 1, "0x7", "3.000");
    let rules = rules_of(&e);
    assert!(rules.contains(&Rule::ZeroLength), "{rules:?}");
    assert!(rules.contains(&Rule::FlowAtBoundary), "{rules:?}");
}

#[test]
fn partial_overlaps_are_reported() {
    let mut e = good_events();
    // Idle runs into the entry, as separately rounded ts and dur made it do.
    e[3] = x(1, "idle", "idle", "0.000", "3.003", "");
    assert_eq!(rules_of(&e), [Rule::PartialOverlap]);
}

#[test]
fn a_flow_inside_idle_is_reported() {
    let mut e = good_events();
    e[1] = x(0, "idle", "idle", "0.500", "0.500", "");
    e[0] = x(0, "msg", "send", "0.700", "0.001", "");
    e[2] = flow('s', 0, "0x7", "0.700");
    e.swap(0, 1);
    assert_eq!(rules_of(&e), [Rule::FlowInIdle]);
}

#[test]
fn a_flow_outside_every_slice_is_reported() {
    let mut e = good_events();
    e[0] = x(0, "msg", "send", "0.700", "0.001", "");
    e[1] = flow('s', 0, "0x7", "0.700");
    e.remove(2);
    assert_eq!(rules_of(&e), [Rule::FlowOutsideSlice]);
}

#[test]
fn an_arrow_into_the_entry_of_another_message_is_reported() {
    let mut e = good_events();
    e[4] = x(1, "entry", "B::got", "3.000", "1.000", r#""msg_id":8"#);
    assert_eq!(rules_of(&e), [Rule::FlowWrongEntry]);
}

#[test]
fn backward_and_ambiguous_flows_are_reported() {
    let mut e = good_events();
    e[0] = x(0, "entry", "A::go", "3.500", "1.000", "");
    e[1] = x(0, "msg", "send", "4.000", "0.001", "");
    e[2] = flow('s', 0, "0x7", "4.000");
    assert_eq!(rules_of(&e), [Rule::FlowBackwards]);

    let mut e = good_events();
    e.insert(2, x(0, "msg", "send", "1.500", "0.002", ""));
    let rules = rules_of(&e);
    assert!(rules.contains(&Rule::FlowAmbiguous), "{rules:?}");
}

#[test]
fn a_holder_reaching_its_entry_end_is_reported() {
    let mut e = good_events();
    e[1] = x(0, "msg", "send", "1.999", "0.001", "");
    e[2] = flow('s', 0, "0x7", "1.999");
    assert_eq!(rules_of(&e), [Rule::HolderAtEnd]);
}

#[test]
fn counts_go_past_the_examples_kept() {
    let mut events = vec![x(0, "entry", "A::go", "0", "100", "")];
    for i in 0..50 {
        events.push(x(0, "entry", "Z::zero", &format!("{}.000", i + 1), "0", ""));
    }
    let r = check(&trace(&events.join(",\n")));
    assert_eq!(r.counts[&Rule::ZeroLength], 50);
    assert_eq!(r.problems.len(), super::EXAMPLES_PER_RULE);
}

#[test]
fn an_end_written_before_its_start_is_reported() {
    // DevTools reads flow events in file order: PE 1's track first loses the arrow.
    let mut e = good_events();
    e.rotate_left(3);
    assert_eq!(rules_of(&e), [Rule::FlowFileOrder]);
    // Flow events in order but the receive's holder first: DevTools reverses the arrow.
    let mut e = good_events();
    let (recv, send) = (e.remove(5), e.remove(1));
    e.insert(0, recv);
    e.push(send);
    assert_eq!(rules_of(&e), [Rule::FlowFileOrder]);
}
