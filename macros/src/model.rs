//! What a `#[chare]` impl declares: its type, its constructor and its entry methods,
//! read from the impl block and checked, each refusal a compile error at the span
//! of what is wrong.

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{
    Error, FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, Pat, ReturnType, Type, TypeReference,
};

/// Names a generated proxy method may not take: the proxies' own methods, which
/// method resolution would pick instead of the entry.
const PROXY_METHODS: &[&str] = &[
    "at",
    "broadcast",
    "broadcast_with",
    "callback",
    "clone",
    "deliver",
    "done_inserting",
    "id",
    "insert",
    "pe",
    "send",
    "send_with",
];

/// The attribute's own arguments: `#[chare]` or `#[chare(migratable)]`.
pub struct Options {
    /// Register the type with `Registry::migratable`.
    pub migratable: bool,
}

impl Options {
    /// Read the attribute's arguments.
    pub fn parse(attr: TokenStream) -> syn::Result<Self> {
        let mut migratable = false;
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("migratable") {
                migratable = true;
                Ok(())
            } else {
                Err(meta.error("unknown #[chare] option: the one option is `migratable`"))
            }
        });
        syn::parse::Parser::parse2(parser, attr)?;
        Ok(Options { migratable })
    }
}

/// One argument of a constructor or entry method (the context excluded).
pub struct Arg {
    /// The name the generated proxy method gives it.
    pub name: Ident,
    pub ty: Type,
}

/// A method marked `#[init]` or `#[entry]`.
pub struct Method {
    pub ident: Ident,
    pub args: Vec<Arg>,
    /// Whether it takes the `&mut Ctx` last.
    pub takes_ctx: bool,
    /// `#[entry(callback)]`: registered as a callback target.
    pub callback: bool,
    /// An `async fn` entry: its handler spawns it as a task.
    pub is_async: bool,
}

/// Everything the impl block declares.
pub struct Decl {
    /// The impl block, its `#[init]` and `#[entry]` attributes removed.
    pub block: ItemImpl,
    /// The chare type's last path segment, for generated names.
    pub name: Ident,
    pub self_ty: Type,
    pub init: Option<Method>,
    pub entries: Vec<Method>,
}

/// Which marker a method carries.
enum Mark {
    Init,
    Entry { callback: bool },
}

impl Decl {
    /// Read and check the impl block.
    pub fn parse(item: TokenStream) -> syn::Result<Self> {
        let mut block: ItemImpl = syn::parse2(item).map_err(|e| {
            Error::new(
                e.span(),
                "#[chare] goes on an inherent impl block: `impl MyChare { ... }`",
            )
        })?;
        if let Some((_, path, _)) = &block.trait_ {
            return Err(Error::new_spanned(
                path,
                "#[chare] goes on the chare's own impl block, not on a trait impl",
            ));
        }
        if !block.generics.params.is_empty() {
            return Err(Error::new_spanned(
                &block.generics,
                "a #[chare] type cannot be generic: every process registers one concrete type",
            ));
        }
        let name = type_name(&block.self_ty)?;
        let mut init = None;
        let mut entries = Vec::new();
        for item in &mut block.items {
            let ImplItem::Fn(f) = item else { continue };
            let Some(mark) = take_mark(f)? else { continue };
            match mark {
                Mark::Init if init.is_some() => {
                    return Err(Error::new_spanned(
                        &f.sig.ident,
                        "a chare has one #[init] constructor",
                    ))
                }
                Mark::Init => init = Some(init_method(f, &name)?),
                Mark::Entry { callback } => entries.push(entry_method(f, callback)?),
            }
        }
        check_names(&entries)?;
        let self_ty = (*block.self_ty).clone();
        Ok(Decl {
            block,
            name,
            self_ty,
            init,
            entries,
        })
    }
}

/// The last path segment of the impl's type (`Counter` in `impl Counter`).
fn type_name(ty: &Type) -> syn::Result<Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            if !last.arguments.is_empty() {
                return Err(Error::new_spanned(
                    &last.arguments,
                    "a #[chare] type cannot be generic: every process registers one concrete type",
                ));
            }
            Ok(last.ident.clone())
        }
        _ => Err(Error::new_spanned(
            ty,
            "#[chare] goes on the impl block of a named struct or enum",
        )),
    }
}

/// Remove the method's `#[init]` or `#[entry]` attribute and say which it was.
fn take_mark(f: &mut ImplItemFn) -> syn::Result<Option<Mark>> {
    let mut mark = None;
    let mut kept = Vec::with_capacity(f.attrs.len());
    for attr in f.attrs.drain(..) {
        let this = if attr.path().is_ident("init") {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                return Err(Error::new_spanned(&attr, "#[init] takes no arguments"));
            }
            Mark::Init
        } else if attr.path().is_ident("entry") {
            Mark::Entry {
                callback: entry_options(&attr)?,
            }
        } else {
            kept.push(attr);
            continue;
        };
        if mark.is_some() {
            return Err(Error::new_spanned(
                &attr,
                "a method is either the #[init] constructor or one #[entry]",
            ));
        }
        mark = Some(this);
    }
    f.attrs = kept;
    Ok(mark)
}

/// `#[entry]` or `#[entry(callback)]`: whether it is a callback target.
fn entry_options(attr: &syn::Attribute) -> syn::Result<bool> {
    if matches!(attr.meta, syn::Meta::Path(_)) {
        return Ok(false);
    }
    let mut callback = false;
    attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("callback") {
            callback = true;
            Ok(())
        } else {
            Err(meta.error("unknown #[entry] option: the one option is `callback`"))
        }
    })?;
    Ok(callback)
}

/// The `#[init]` method: no receiver, returns `Self`.
fn init_method(f: &ImplItemFn, name: &Ident) -> syn::Result<Method> {
    if let Some(recv) = f.sig.receiver() {
        return Err(Error::new_spanned(
            recv,
            "#[init] builds the chare: it takes no `self` and returns `Self`",
        ));
    }
    let returns_self = match &f.sig.output {
        ReturnType::Type(_, ty) => match &**ty {
            Type::Path(p) => p.path.is_ident("Self") || p.path.is_ident(name),
            _ => false,
        },
        ReturnType::Default => false,
    };
    if !returns_self {
        return Err(Error::new(
            match &f.sig.output {
                ReturnType::Type(_, ty) => ty.span(),
                ReturnType::Default => f.sig.ident.span(),
            },
            "#[init] returns `Self`: it builds the chare from its arguments",
        ));
    }
    method(f, false, 0)
}

/// An `#[entry]` method: takes `&mut self` (or `&self`); returns nothing or a
/// `Result<(), E>` (the compiler checks which, through `EntryResult`).
fn entry_method(f: &ImplItemFn, callback: bool) -> syn::Result<Method> {
    if f.sig.asyncness.is_some() {
        return async_entry_method(f, callback);
    }
    match f.sig.receiver() {
        Some(r) if r.colon_token.is_none() && r.reference.is_some() => {}
        _ => {
            return Err(Error::new_spanned(
                &f.sig.ident,
                "an #[entry] method takes `&mut self` (or `&self`): it runs on a live chare",
            ))
        }
    }
    let m = method(f, callback, 0)?;
    check_callback_args(&m)?;
    Ok(m)
}

/// An async `#[entry]`: no receiver (its task runs on after the handler returns, so
/// it cannot borrow the chare), its `Task` first and no `Ctx` (the task reaches the
/// PE's with `t.with`); the arguments after the task travel in the message.
fn async_entry_method(f: &ImplItemFn, callback: bool) -> syn::Result<Method> {
    if let Some(r) = f.sig.receiver() {
        return Err(Error::new_spanned(
            r,
            "an async #[entry] takes no `self`: its task runs on after the handler returns, \
             so it cannot borrow the chare; pass what it needs as arguments",
        ));
    }
    let takes_task = matches!(f.sig.inputs.first(), Some(FnArg::Typed(t))
        if matches!(&*t.ty, Type::Path(p)
            if p.path.segments.last().is_some_and(|s| s.ident == "Task")));
    if !takes_task {
        return Err(Error::new_spanned(
            &f.sig.ident,
            "an async #[entry] takes its task handle first: `t: Task`",
        ));
    }
    let mut m = method(f, callback, 1)?;
    if m.takes_ctx {
        return Err(Error::new_spanned(
            &f.sig.inputs,
            "an async #[entry] takes no `&mut Ctx`: await `t.with(|ctx| ..)` to use the PE's",
        ));
    }
    check_callback_args(&m)?;
    m.is_async = true;
    Ok(m)
}

/// A callback entry takes one value or none.
fn check_callback_args(m: &Method) -> syn::Result<()> {
    if m.callback && m.args.len() > 1 {
        return Err(Error::new_spanned(
            &m.args[1].ty,
            "an #[entry(callback)] takes one value (or none): a callback delivers one reduction \
             result; wrap several in a Vec or an Encoded struct",
        ));
    }
    Ok(())
}

/// The arguments of a method after its first `skip` (an async entry's task), its
/// `&mut Ctx` last, checked.
fn method(f: &ImplItemFn, callback: bool, skip: usize) -> syn::Result<Method> {
    let sig = &f.sig;
    if let (Some(a), 0) = (&sig.asyncness, skip) {
        return Err(Error::new_spanned(
            a,
            "#[init] is not async: it builds the chare at once",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &sig.generics,
            "entry methods cannot be generic: their arguments travel in one message type",
        ));
    }
    let typed: Vec<&syn::PatType> = sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(t) => Some(t),
            FnArg::Receiver(_) => None,
        })
        .skip(skip)
        .collect();
    let takes_ctx = typed.last().is_some_and(|t| is_ctx(&t.ty));
    let n = typed.len() - usize::from(takes_ctx);
    let mut args = Vec::with_capacity(n);
    for (i, t) in typed[..n].iter().enumerate() {
        if is_ctx(&t.ty) {
            return Err(Error::new_spanned(
                &t.ty,
                "the `&mut Ctx` parameter comes last",
            ));
        }
        if let Type::Reference(r) = &*t.ty {
            return Err(Error::new_spanned(r,
                "entry arguments travel in messages: take owned values (String, Vec<T>), not references",
            ));
        }
        let name = match &*t.pat {
            Pat::Ident(p) if p.ident != "self" && p.ident != "ctx" => p.ident.clone(),
            _ => Ident::new(&format!("arg{i}"), t.pat.span()),
        };
        args.push(Arg {
            name,
            ty: (*t.ty).clone(),
        });
    }
    Ok(Method {
        ident: sig.ident.clone(),
        args,
        takes_ctx,
        callback,
        is_async: false,
    })
}

/// `&mut Ctx`, `&mut Ctx<'_>` or `&mut some::path::Ctx`.
fn is_ctx(ty: &Type) -> bool {
    match ty {
        Type::Reference(TypeReference {
            mutability: Some(_),
            elem,
            ..
        }) => matches!(&**elem, Type::Path(p)
            if p.path.segments.last().is_some_and(|s| s.ident == "Ctx")),
        _ => false,
    }
}

/// Refuse entry names the proxies' own methods would shadow, and clashes among the
/// generated names.
fn check_names(entries: &[Method]) -> syn::Result<()> {
    let mut taken: Vec<(String, Span)> = Vec::new();
    for m in entries {
        let name = m.ident.to_string();
        if PROXY_METHODS.contains(&name.as_str()) {
            return Err(Error::new_spanned(
                &m.ident,
                format!(
                    "an entry cannot be called `{name}`: the proxies' own `{name}` would be \
                     called instead of it; rename the entry"
                ),
            ));
        }
        let mut generated = vec![name.clone(), format!("variant {}", variant_name(&m.ident))];
        if m.callback {
            generated.push(format!("{name}_callback"));
        }
        for g in generated {
            if taken.iter().any(|(t, _)| *t == g) {
                return Err(Error::new_spanned(
                    &m.ident,
                    format!("two entries generate the same {}; rename one", describe(&g)),
                ));
            }
            taken.push((g, m.ident.span()));
        }
    }
    Ok(())
}

/// A generated name as an error message names it.
fn describe(generated: &str) -> String {
    match generated.strip_prefix("variant ") {
        Some(v) => format!("message variant `{v}`"),
        None => format!("proxy method `{generated}`"),
    }
}

/// `total_sum` -> `TotalSum`, the entry's message variant.
pub fn variant_name(method: &Ident) -> Ident {
    let text = method.to_string();
    let mut out = String::with_capacity(text.len());
    for part in text
        .trim_start_matches("r#")
        .split('_')
        .filter(|p| !p.is_empty())
    {
        let mut chars = part.chars();
        if let Some(c) = chars.next() {
            out.extend(c.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    Ident::new(&out, method.span())
}
