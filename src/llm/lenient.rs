//! serde building blocks that read a JSON value of an unexpected type as absent.
//!
//! A streamed chunk is decoded straight into typed structs ([`super::chunk`]) instead of a
//! `serde_json::Value` tree, but real servers put odd things in odd places (a number where a
//! string belongs, `null` for a list, a call object instead of a list of calls), and one odd
//! field must not cost the whole chunk. Each type here accepts any JSON value, keeps it when
//! it has the expected kind and reads it as absent otherwise, exactly as looking the field up
//! in a `Value` with `as_str`, `as_u64`, `as_f64` or `as_array` would. Strings borrow from the
//! chunk's bytes when they hold no escapes.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// How one lenient type reads each kind of JSON value; a kind it does not override is
/// skipped and read as the type's default (absent).
trait Read<'de>: Sized + Default {
    fn string(_: Cow<'de, str>) -> Self {
        Self::default()
    }
    fn unsigned(_: u64) -> Self {
        Self::default()
    }
    fn signed(_: i64) -> Self {
        Self::default()
    }
    fn float(_: f64) -> Self {
        Self::default()
    }
    fn boolean(_: bool) -> Self {
        Self::default()
    }
    fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

struct Reader<T>(PhantomData<T>);

impl<'de, T: Read<'de>> Visitor<'de> for Reader<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Ok(T::boolean(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Ok(T::signed(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Ok(T::unsigned(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Ok(T::float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::list(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }
}

// `Deserialize` goes through [`Reader`]: each type's `Read` impl says which kinds it keeps.

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

/// A string (`as_str`); anything else is absent.
#[derive(Debug, Default)]
pub struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Read<'de> for Text<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        Text(Some(s))
    }
}

impl<'a> Text<'a> {
    /// The text, owned; `None` when absent or, if `non_empty`, when empty.
    pub fn owned(self, non_empty: bool) -> Option<String> {
        self.0
            .filter(|s| !(non_empty && s.is_empty()))
            .map(Cow::into_owned)
    }
}

/// A non-negative integer (`as_u64`); a negative or fractional number is absent.
#[derive(Debug, Default, Clone, Copy)]
pub struct Count(pub Option<u64>);

impl Read<'_> for Count {
    fn unsigned(n: u64) -> Self {
        Count(Some(n))
    }
}

/// Any number (`as_f64`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Number(pub Option<f64>);

impl Read<'_> for Number {
    fn unsigned(n: u64) -> Self {
        Number(Some(n as f64))
    }
    fn signed(n: i64) -> Self {
        Number(Some(n as f64))
    }
    fn float(n: f64) -> Self {
        Number(Some(n))
    }
}

/// Tool-call arguments: JSON text as streamed, or, from servers that send the arguments as
/// an object (or any other JSON value) instead of text, that value written out as JSON.
/// Absent or `null` is empty text.
#[derive(Debug, Default)]
pub struct Arguments<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Read<'de> for Arguments<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        Arguments(s)
    }
    fn unsigned(n: u64) -> Self {
        Arguments(Cow::Owned(Value::from(n).to_string()))
    }
    fn signed(n: i64) -> Self {
        Arguments(Cow::Owned(Value::from(n).to_string()))
    }
    fn float(n: f64) -> Self {
        Arguments(Cow::Owned(Value::from(n).to_string()))
    }
    fn boolean(b: bool) -> Self {
        Arguments(Cow::Owned(Value::from(b).to_string()))
    }
    fn list<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let v = Value::deserialize(SeqAccessDeserializer::new(seq))?;
        Ok(Arguments(Cow::Owned(v.to_string())))
    }
    fn object<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let v = Value::deserialize(MapAccessDeserializer::new(map))?;
        Ok(Arguments(Cow::Owned(v.to_string())))
    }
}

/// An object read as `T` (whose fields are lenient themselves); any other value is read as
/// `T::default()`, the object with every field absent.
#[derive(Debug, Default)]
pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de> + Default> Read<'de> for Obj<T> {
    fn object<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
    }
}

/// An array (`as_array`); any other value is absent.
#[derive(Debug)]
pub struct List<T>(pub Option<Vec<T>>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(None)
    }
}

impl<'de, T: Deserialize<'de>> Read<'de> for List<T> {
    fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(List(Some(items)))
    }
}

/// An array of which only the first `N` elements are read; the rest are skipped as they
/// are parsed, unbuilt. A server sends `top_logprobs` alternatives in a list of its
/// choosing: 20,000 of them per token once cost seconds of CPU per token downstream. `None`
/// for anything but an array, as [`List`].
#[derive(Debug)]
pub struct Capped<T, const N: usize>(pub Option<Vec<T>>);

impl<T, const N: usize> Default for Capped<T, N> {
    fn default() -> Self {
        Capped(None)
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Read<'de> for Capped<T, N> {
    fn list<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(N));
        while items.len() < N {
            match seq.next_element()? {
                Some(item) => items.push(item),
                None => return Ok(Capped(Some(items))),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Capped(Some(items)))
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Capped<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Reader::<Self>(PhantomData))
    }
}

/// A list of objects, or one object where a server sends a single one instead of a list
/// (a whole tool call); anything else is an empty list.
#[derive(Debug)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Read<'de> for OneOrMany<T> {
    fn list<A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let List(items) = List::list(seq)?;
        Ok(OneOrMany(items.unwrap_or_default()))
    }
    fn object<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|one| OneOrMany(vec![one]))
    }
}

/// For `#[serde(default, deserialize_with = "present")]`: a field that is there, whatever
/// its value (even `null`), is `Some`, as `Value::get` finds it; only a missing key is `None`.
/// Servers' alternatives are chosen this way (`delta`, else `message`).
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}
