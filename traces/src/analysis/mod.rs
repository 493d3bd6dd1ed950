//! The tool side: reading a finished Chrome trace back ([`read`]) and what is made of
//! it: checks ([`validate`]), a [`summary`] and the HTML report ([`report_html`]).
//! Nothing here depends on the run side: it reads files, from chorus or not.
//!
//! The files import downward only, in this order: `model` (the vocabulary every
//! reader and analysis shares: items, flow ends, arguments, categories); the readers
//! `protobuf` (with `protobuf_rules`, Perfetto's interning rules), [`events`] (JSON,
//! and which format a file is), [`read`] and [`compact`]; the results `figures` and
//! what computes them, [`views`] and `accumulate` (the summary's passes);
//! [`validate`]; `style` (number formats, palette, escaping) and the renderers
//! [`summary_text`] and, with `svg`, `report_overview`, `report_views` and
//! `report_lb` (each balancing step's per-PE loads), [`report_html`]; [`summary`]
//! runs the passes.

pub(crate) mod accumulate;
pub mod compact;
pub mod events;
pub(crate) mod figures;
pub(crate) mod model;
pub mod protobuf;
pub(crate) mod protobuf_rules;
pub mod read;
pub mod report_html;
pub(crate) mod report_lb;
pub(crate) mod report_overview;
pub(crate) mod report_views;
pub(crate) mod style;
pub mod summary;
pub mod summary_text;
pub(crate) mod svg;
pub mod validate;
pub mod views;
