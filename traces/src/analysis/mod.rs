//! The tool side: reading a finished Chrome trace back ([`read`]) and what is made of
//! it: checks ([`validate`]), a [`summary`] and the HTML report ([`report_html`]).
//! Nothing here depends on the run side: it reads files, from chorus or not.

pub mod compact;
pub mod events;
pub mod protobuf;
pub mod read;
pub mod report_html;
pub(crate) mod report_views;
pub mod summary;
pub mod summary_text;
pub mod validate;
pub mod views;
