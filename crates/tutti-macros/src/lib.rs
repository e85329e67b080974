//! The attribute macro of tutti, re-exported as `tutti::service`; see its
//! documentation there for what it generates and how to use it.
//!
//! The generated code names tutti's items by absolute paths (`::tutti::…`), so
//! the crate that uses the macro must depend on `tutti` under that name.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{
    parse_macro_input, Attribute, FnArg, Ident, ItemTrait, LitStr, Pat, ReturnType, Token,
    TraitItem, Type,
};

/// Turns a trait of `async fn`s into an RPC service: a client type, a server
/// object and one message type per method. See `tutti::service` for the
/// documentation and an example.
#[proc_macro_attribute]
pub fn service(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr as Args);
    let item = parse_macro_input!(item as ItemTrait);
    match expand(args, item) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `#[service]` or `#[service(name = "wire.name")]`.
struct Args {
    name: Option<LitStr>,
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.is_empty() {
            return Ok(Args { name: None });
        }
        let key: Ident = input.parse()?;
        if key != "name" {
            return Err(syn::Error::new(
                key.span(),
                "the only argument of #[service] is `name = \"…\"`, the service's name on the wire",
            ));
        }
        input.parse::<Token![=]>()?;
        let name: LitStr = input.parse()?;
        if name.value().is_empty() {
            return Err(syn::Error::new(
                name.span(),
                "a service name cannot be empty",
            ));
        }
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the service's name"));
        }
        Ok(Args { name: Some(name) })
    }
}

/// One method of the service.
struct Method {
    attrs: Vec<Attribute>,
    name: Ident,
    /// The message type's name: the method's in CamelCase.
    message: Ident,
    mutable: bool,
    args: Vec<(Ident, Type)>,
    output: Type,
    /// `service.method(T1,T2)->R`, the message's stable name.
    wire: String,
}

fn expand(args: Args, item: ItemTrait) -> syn::Result<TokenStream2> {
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            item.generics.span(),
            "a service trait cannot be generic: its methods are messages with fixed types",
        ));
    }
    if !item.supertraits.is_empty() {
        return Err(syn::Error::new(
            item.supertraits.span(),
            "a service trait takes no supertraits (it gets `Send + 'static`)",
        ));
    }
    let service = item.ident.to_string().trim_start_matches("r#").to_string();
    let wire_service = args.name.as_ref().map_or(service.clone(), LitStr::value);
    let mut methods = Vec::new();
    for it in &item.items {
        let TraitItem::Fn(f) = it else {
            return Err(syn::Error::new(
                it.span(),
                "a service trait holds only `async fn` methods",
            ));
        };
        methods.push(method(f, &wire_service)?);
    }
    if methods.is_empty() {
        return Err(syn::Error::new(
            item.ident.span(),
            "a service needs at least one method",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for m in &methods {
        if !seen.insert(m.message.to_string()) {
            return Err(syn::Error::new(
                m.name.span(),
                format!(
                    "two methods map to the message type `{}`; rename one",
                    m.message
                ),
            ));
        }
    }

    let vis = &item.vis;
    let trait_ident = &item.ident;
    let trait_attrs = &item.attrs;
    let module = format_ident!("{}_methods", snake(&service));
    let server = format_ident!("{}Server", service);
    let client = format_ident!("{}Client", service);

    let trait_methods = methods.iter().map(|m| {
        let (attrs, name, output) = (&m.attrs, &m.name, &m.output);
        let recv = receiver(m.mutable);
        let args = m.args.iter().map(|(a, t)| quote!(#a: #t));
        quote! {
            #(#attrs)*
            fn #name(#recv, #(#args),*)
                -> impl ::core::future::Future<Output = #output> + ::core::marker::Send;
        }
    });

    let messages = methods.iter().map(|m| {
        let (message, output, wire, name) = (&m.message, &m.output, &m.wire, &m.name);
        let fields = m.args.iter().map(|(a, t)| quote!(pub #a: #t));
        let doc = format!("The arguments of [`{service}::{name}`](super::{service}::{name}), sent as the message `{wire}`.");
        quote! {
            #[doc = #doc]
            #[derive(::tutti::__private::serde::Serialize, ::tutti::__private::serde::Deserialize)]
            #[serde(crate = "::tutti::__private::serde")]
            #[allow(missing_docs)]
            pub struct #message { #(#fields),* }
            impl ::tutti::msg::Message for #message {
                type Reply = #output;
            }
            impl ::tutti::msg::Remote for #message {
                const NAME: &'static str = #wire;
            }
        }
    });

    let dyn_methods = methods.iter().map(|m| {
        let (name, output) = (&m.name, &m.output);
        let args = m.args.iter().map(|(a, t)| quote!(#a: #t));
        quote! {
            fn #name<'s>(&'s mut self, #(#args),*)
                -> ::core::pin::Pin<::std::boxed::Box<
                    dyn ::core::future::Future<Output = #output> + ::core::marker::Send + 's>>;
        }
    });
    let dyn_impls = methods.iter().map(|m| {
        let (name, output) = (&m.name, &m.output);
        let args = m.args.iter().map(|(a, t)| quote!(#a: #t));
        let names = m.args.iter().map(|(a, _)| a);
        quote! {
            fn #name<'s>(&'s mut self, #(#args),*)
                -> ::core::pin::Pin<::std::boxed::Box<
                    dyn ::core::future::Future<Output = #output> + ::core::marker::Send + 's>>
            {
                ::std::boxed::Box::pin(<T as super::#trait_ident>::#name(self, #(#names),*))
            }
        }
    });

    let registers = methods.iter().map(|m| {
        let message = &m.message;
        quote!(table.register::<#module::#message>()?;)
    });
    let handlers = methods.iter().map(|m| {
        let (name, message, output) = (&m.name, &m.message, &m.output);
        let names: Vec<_> = m.args.iter().map(|(a, _)| a).collect();
        quote! {
            impl ::tutti::msg::Handler<#module::#message> for #server {
                fn handle(&mut self, m: #module::#message, _: &mut ())
                    -> impl ::core::future::Future<Output = #output> + ::core::marker::Send
                {
                    let #module::#message { #(#names),* } = m;
                    self.0.#name(#(#names),*)
                }
            }
        }
    });

    let client_methods = methods.iter().map(|m| {
        let (attrs, name, message, output, wire) = (&m.attrs, &m.name, &m.message, &m.output, &m.wire);
        let blocking = format_ident!("{}_blocking", name);
        let args: Vec<_> = m.args.iter().map(|(a, t)| quote!(#a: #t)).collect();
        let names: Vec<_> = m.args.iter().map(|(a, _)| a).collect();
        let blocking_doc = format!(
            "[`{name}`](Self::{name}) from a plain thread: blocks until the reply (or the deadline)."
        );
        quote! {
            #(#attrs)*
            ///
            /// Calls the service; an `Err` names what failed (the server gone, the
            /// deadline passed, a method the server does not offer, …).
            pub async fn #name(&self, #(#args),*)
                -> ::core::result::Result<#output, ::tutti::rpc::RpcError>
            {
                self.proxy
                    .call(#module::#message { #(#names),* })
                    .await
                    .map_err(|e| ::tutti::__private::method_error(e, #wire))
            }

            #[doc = #blocking_doc]
            pub fn #blocking(&self, #(#args),*)
                -> ::core::result::Result<#output, ::tutti::rpc::RpcError>
            {
                self.proxy
                    .call_blocking(#module::#message { #(#names),* })
                    .map_err(|e| ::tutti::__private::method_error(e, #wire))
            }
        }
    });

    let module_doc = format!(
        "The messages of the [`{service}`] service, one per method (generated by `#[tutti::service]`)."
    );
    let server_doc = format!(
        "The [`{service}`] service as an object to publish ([`Rpc::publish`](::tutti::rpc::Rpc::publish)): \
         it wraps any implementation of the trait, so that clients need not know its type."
    );
    let client_doc = format!(
        "A client of the [`{service}`] service: one method per method of the trait, each returning \
         `Result<_, RpcError>`. Make one with [`Rpc::client`](::tutti::rpc::Rpc::client) from the \
         service's URL. Cloning is cheap; clones share the connection."
    );

    Ok(quote! {
        #(#trait_attrs)*
        #vis trait #trait_ident: ::core::marker::Send + 'static {
            #(#trait_methods)*
        }

        #[doc = #module_doc]
        #vis mod #module {
            #[allow(unused_imports)]
            use super::*;

            #(#messages)*

            /// The service's methods behind one object-safe trait (their futures boxed), so
            /// that the server object need not name the implementation's type.
            #[doc(hidden)]
            pub trait Dyn: ::core::marker::Send + 'static {
                #(#dyn_methods)*
            }

            impl<T: super::#trait_ident> Dyn for T {
                #(#dyn_impls)*
            }
        }

        #[doc = #server_doc]
        #vis struct #server(::std::boxed::Box<dyn #module::Dyn>);

        impl #server {
            /// Wraps `service`, an implementation of the trait, for publishing.
            pub fn new(service: impl #trait_ident) -> Self {
                #server(::std::boxed::Box::new(service))
            }
        }

        impl ::core::fmt::Debug for #server {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(::core::stringify!(#server))
            }
        }

        impl ::tutti::msg::Object for #server {
            type Context = ();
            fn remote(
                table: &mut ::tutti::msg::Dispatch<Self>,
            ) -> ::core::result::Result<(), ::tutti::msg::RegistryError> {
                #(#registers)*
                ::core::result::Result::Ok(())
            }
        }

        #(#handlers)*

        #[doc = #client_doc]
        #[derive(Clone, Debug)]
        #vis struct #client {
            proxy: ::tutti::rpc::Proxy<#server>,
        }

        impl ::tutti::rpc::Client for #client {
            type Object = #server;
            fn from_proxy(proxy: ::tutti::rpc::Proxy<#server>) -> Self {
                #client { proxy }
            }
        }

        impl #client {
            /// The proxy the client calls through (its URL, whether it is local, its deadline).
            pub fn proxy(&self) -> &::tutti::rpc::Proxy<#server> {
                &self.proxy
            }

            /// The client with another deadline for each of its calls.
            pub fn with_deadline(self, deadline: ::std::time::Duration) -> Self {
                #client { proxy: self.proxy.with_deadline(deadline) }
            }

            #(#client_methods)*
        }
    })
}

fn receiver(mutable: bool) -> TokenStream2 {
    if mutable {
        quote!(&mut self)
    } else {
        quote!(&self)
    }
}

fn method(f: &syn::TraitItemFn, service: &str) -> syn::Result<Method> {
    let sig = &f.sig;
    let name = sig.ident.clone();
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            format!("service method `{name}` must be an `async fn`"),
        ));
    }
    if f.default.is_some() {
        return Err(syn::Error::new(
            f.default.span(),
            "service methods have no default body: the server implements each",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "service methods cannot be generic: each is a message of fixed types",
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(
            v.span(),
            "service methods are not variadic",
        ));
    }
    let mut inputs = sig.inputs.iter();
    let mutable = match inputs.next() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.colon_token.is_none() => {
            r.mutability.is_some()
        }
        other => {
            let span = other.map_or(sig.ident.span(), |a| a.span());
            return Err(syn::Error::new(
                span,
                format!("service method `{name}` takes `&self` or `&mut self` first"),
            ));
        }
    };
    let mut args = Vec::new();
    for input in inputs {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new(input.span(), "only one receiver"));
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new(
                pt.pat.span(),
                "name each argument of a service method (it becomes a field of its message)",
            ));
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() {
            return Err(syn::Error::new(
                pi.span(),
                "a plain argument name is needed here",
            ));
        }
        if let Type::Reference(r) = &*pt.ty {
            return Err(syn::Error::new(
                r.span(),
                "service arguments are sent as values: take an owned type (`String`, not `&str`)",
            ));
        }
        if let Type::ImplTrait(t) = &*pt.ty {
            return Err(syn::Error::new(
                t.span(),
                "service arguments have concrete types (they are decoded on the server)",
            ));
        }
        args.push((pi.ident.clone(), (*pt.ty).clone()));
    }
    let output = match &sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    let types: Vec<String> = args.iter().map(|(_, t)| compact(t)).collect();
    let bare = name.to_string().trim_start_matches("r#").to_string();
    let wire = format!(
        "{service}.{bare}({})->{}",
        types.join(","),
        compact(&output)
    );
    Ok(Method {
        attrs: f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .cloned()
            .collect(),
        message: Ident::new(&camel(&bare), name.span()),
        name,
        mutable,
        args,
        output,
        wire,
    })
}

/// A type as written, without whitespace: part of a method's wire name.
fn compact(t: &Type) -> String {
    t.to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// `fetch_work` → `FetchWork`.
fn camel(s: &str) -> String {
    s.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

/// `WorkQueue` → `work_queue`.
fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
