//! The expansion, read back as Rust items, and the compile errors of what the
//! attribute refuses.

use crate::expand;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{File, Item};

/// Expand `item` under `#[chare(attr)]` and parse the result.
fn expand_ok(attr: TokenStream, item: TokenStream) -> File {
    let out = expand::chare(attr, item);
    let text = out.to_string();
    assert!(!text.contains("compile_error"), "refused: {text}");
    syn::parse2(out).expect("the expansion parses as items")
}

/// The message of the compile error the expansion is, and its text.
fn expand_err(item: TokenStream) -> String {
    let out = expand::chare(TokenStream::new(), item).to_string();
    assert!(out.contains("compile_error"), "accepted: {out}");
    out
}

/// The enum, trait and impls named in `file`, as text, by kind.
fn find<'a>(file: &'a File, pick: impl Fn(&'a Item) -> Option<String>) -> Vec<String> {
    file.items.iter().filter_map(pick).collect()
}

fn counter() -> TokenStream {
    quote! {
        impl Counter {
            #[init]
            fn new(start: u64, ctx: &mut Ctx) -> Self { Counter { n: start } }
            #[entry]
            fn add(&mut self, n: u64, ctx: &mut Ctx) { self.n += n; }
            #[entry]
            fn add_both(&mut self, a: u64, b: String) { self.n += a; }
            #[entry(callback)]
            fn total(&mut self, cb: u64, ctx: &mut Ctx) {}
            #[entry(callback)]
            fn quiet(&self, ctx: &mut Ctx) {}
            fn helper(&self) -> u64 { self.n }
        }
    }
}

#[test]
fn a_counter_gets_its_message_enum_with_one_variant_per_entry() {
    let file = expand_ok(TokenStream::new(), counter());
    let enums = find(&file, |i| match i {
        Item::Enum(e) => Some(quote!(#e).to_string()),
        _ => None,
    });
    assert_eq!(enums.len(), 1);
    let e = &enums[0];
    assert!(e.contains("pub enum CounterMsg"), "{e}");
    for v in [
        "Add (u64)",
        "AddBoth (u64 , String)",
        "Total (u64)",
        "Quiet",
    ] {
        assert!(e.contains(v), "{v} missing from {e}");
    }
    assert!(e.contains("serde :: Serialize"), "{e}");
}

#[test]
fn the_impl_block_keeps_its_methods_without_the_markers() {
    let file = expand_ok(TokenStream::new(), counter());
    let Item::Impl(block) = &file.items[0] else {
        panic!("the impl block comes first")
    };
    assert_eq!(block.items.len(), 6, "every method is kept, the helper too");
    let text = quote!(#block).to_string();
    assert!(!text.contains("# [entry"), "{text}");
    assert!(!text.contains("# [init"), "{text}");
}

#[test]
fn the_chare_impl_builds_from_init_and_dispatches_every_variant() {
    let file = expand_ok(TokenStream::new(), counter());
    let chare = find(&file, |i| match i {
        Item::Impl(b) if b.trait_.is_some() => Some(quote!(#b).to_string()),
        _ => None,
    });
    // The Chare impl and the proxy trait's blanket impl.
    assert_eq!(chare.len(), 2);
    let c = &chare[0];
    assert!(
        c.contains("type Init = u64"),
        "one argument is its own type: {c}"
    );
    assert!(c.contains("type Msg = CounterMsg"), "{c}");
    assert!(c.contains("Self :: new (start , __chorus_ctx)"), "{c}");
    let report = ":: chorus_core :: target :: EntryResult :: report";
    let both = "Self :: add_both (self , a , b ,) , __chorus_ctx , \"Counter::add_both\")";
    assert!(
        c.contains(&format!(
            "CounterMsg :: AddBoth (a , b) => {report} ({both}"
        )),
        "{c}"
    );
    let quiet = "Self :: quiet (self , __chorus_ctx) , __chorus_ctx , \"Counter::quiet\")";
    assert!(
        c.contains(&format!("CounterMsg :: Quiet => {report} ({quiet}")),
        "{c}"
    );
}

#[test]
fn registration_names_the_type_and_only_the_callback_entries() {
    let file = expand_ok(TokenStream::new(), counter());
    let text = quote!(#file).to_string();
    assert!(
        text.contains("reg . chare :: < Self > (\"Counter\")"),
        "{text}"
    );
    assert!(
        text.contains("reg . entry :: < Self , u64 > (\"Counter::total\" , CounterMsg :: Total)"),
        "{text}"
    );
    assert!(
        text.contains(
            "reg . entry :: < Self , () > (\"Counter::quiet\" , | () | CounterMsg :: Quiet)"
        ),
        "{text}"
    );
    assert!(
        !text.contains("reg . entry :: < Self , u64 > (\"Counter::add\""),
        "a plain entry is no callback target"
    );
    assert!(text.contains("pub fn total_callback (ctx"), "{text}");
}

#[test]
fn migratable_registers_with_migratable() {
    let file = expand_ok(quote!(migratable), counter());
    let text = quote!(#file).to_string();
    assert!(
        text.contains("reg . migratable :: < Self > (\"Counter\")"),
        "{text}"
    );
}

#[test]
fn the_proxy_trait_has_a_send_per_entry_and_a_callback_per_callback_entry() {
    let file = expand_ok(TokenStream::new(), counter());
    let traits = find(&file, |i| match i {
        Item::Trait(t) => Some(
            t.items
                .iter()
                .map(|m| match m {
                    syn::TraitItem::Fn(f) => f.sig.ident.to_string(),
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => None,
    });
    assert_eq!(
        traits,
        ["add,add_both,total,total_callback,quiet,quiet_callback"]
    );
    let text = quote!(#file).to_string();
    assert!(
        text.contains(
            "fn add_both (& self , ctx : & mut :: chorus_core :: Ctx , a : u64 , b : String)"
        ),
        "{text}"
    );
}

#[test]
fn without_init_the_chare_is_built_with_default_from_no_arguments() {
    let file = expand_ok(
        TokenStream::new(),
        quote! {
            impl Elem { #[entry] fn go(&mut self) {} }
        },
    );
    let text = quote!(#file).to_string();
    assert!(text.contains("type Init = ()"), "{text}");
    assert!(text.contains("Default > :: default ()"), "{text}");
}

#[test]
fn several_init_arguments_make_a_tuple() {
    let file = expand_ok(
        TokenStream::new(),
        quote! {
            impl W { #[init] fn new(a: u32, b: String) -> W { W } }
        },
    );
    let text = quote!(#file).to_string();
    assert!(text.contains("type Init = (u32 , String ,)"), "{text}");
    assert!(text.contains("let (a , b ,) = __chorus_init"), "{text}");
}

#[test]
fn an_argument_called_ctx_is_renamed_in_the_proxy() {
    let file = expand_ok(
        TokenStream::new(),
        quote! {
            impl W { #[entry] fn go(&mut self, ctx: u64, c: &mut Ctx) {} }
        },
    );
    let text = quote!(#file).to_string();
    assert!(
        text.contains("fn go (& self , ctx : & mut :: chorus_core :: Ctx , arg0 : u64)"),
        "{text}"
    );
}

#[test]
fn refusals_say_what_is_wrong() {
    let cases = [
        (
            quote!(impl W { #[entry] fn send(&mut self) {} }),
            "cannot be called `send`",
        ),
        (
            quote!(impl W { #[entry] fn go(self) {} }),
            "takes `&mut self`",
        ),
        (quote!(impl W { #[entry] fn go() {} }), "takes `&mut self`"),
        (
            quote!(impl W { #[entry] fn go(&mut self, s: &str) {} }),
            "not references",
        ),
        (
            quote!(impl W { #[entry] fn go(&mut self, c: &mut Ctx, n: u64) {} }),
            "comes last",
        ),
        (
            quote!(impl W { #[entry(callback)] fn go(&mut self, a: u64, b: u64) {} }),
            "takes one value",
        ),
        (
            quote!(impl W { #[entry(cb)] fn go(&mut self) {} }),
            "unknown #[entry] option",
        ),
        (
            quote!(impl W { #[entry] async fn go(&mut self) {} }),
            "takes no `self`",
        ),
        (
            quote!(impl W { #[entry] async fn go(n: u64) {} }),
            "task handle first",
        ),
        (
            quote!(impl W { #[entry] async fn go(t: Task, ctx: &mut Ctx) {} }),
            "takes no `&mut Ctx`",
        ),
        (
            quote!(impl W { #[init] async fn new() -> Self { W } }),
            "#[init] is not async",
        ),
        (
            quote!(impl W { #[entry] fn go<T>(&mut self, t: T) {} }),
            "cannot be generic",
        ),
        (
            quote!(impl W { #[init] fn a() -> Self { W } #[init] fn b() -> Self { W } }),
            "one #[init]",
        ),
        (
            quote!(impl W { #[init] fn a(&self) -> Self { W } }),
            "takes no `self`",
        ),
        (
            quote!(impl W { #[init] fn a() -> u64 { 1 } }),
            "returns `Self`",
        ),
        (
            quote!(impl W { #[init] #[entry] fn a() -> Self { W } }),
            "either the #[init]",
        ),
        (
            quote!(impl W { #[entry] fn a_b(&mut self) {} #[entry] fn a__b(&mut self) {} }),
            "same message variant `AB`",
        ),
        (
            quote!(
                impl<T> W<T> {}
            ),
            "cannot be generic",
        ),
        (quote!(impl Clone for W {}), "not on a trait impl"),
        (
            quote!(
                struct W;
            ),
            "inherent impl block",
        ),
    ];
    for (item, want) in cases {
        let err = expand_err(item.clone());
        assert!(err.contains(want), "{item}: wanted {want:?} in {err}");
    }
}

#[test]
fn an_unknown_option_of_the_attribute_is_refused() {
    let out = expand::chare(quote!(movable), quote!(impl W {})).to_string();
    assert!(out.contains("the one option is `migratable`"), "{out}");
}

#[test]
fn errors_point_at_what_is_wrong() {
    let item: TokenStream = "impl W { #[entry] fn go(&mut self, s: &str) {} }"
        .parse()
        .unwrap();
    let err = crate::model::Decl::parse(item).err().expect("refused");
    // The span starts at the reference type, column 38 of the one line.
    assert_eq!(err.span().start().column, 38, "{err}");
}
