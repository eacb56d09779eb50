"""Corpus loading: clear errors naming file and line; sentences; lead subjects."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rootweaver_innovations.documents.corpus import CorpusError, Passage, load_corpus_jsonl, split_sentences


def test_corpus_jsonl_roundtrip(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text('{"id": "a", "title": "A", "text": "One sentence. Two sentence."}\n\n'
                 '{"id": "b", "title": "B", "sentences": ["x", "y"]}\n')
    ps = load_corpus_jsonl(f)
    assert [p.sentences for p in ps] == [("One sentence.", "Two sentence."), ("x", "y")]


@pytest.mark.parametrize("content, msg", [
    ('{"id": "a", "title": "A", "text": "t"}\n{"id": "b", "title": "B", "text": "t"\n', r"c\.jsonl:2: malformed JSON"),
    ('{"id": "a", "title": "A"}\n', r":1: field 'text'"),
    ('{"id": "", "title": "A", "text": "t"}\n', r":1: field 'id'"),
    ('{"id": "a", "title": "A", "text": "t"}\n{"id": "a", "title": "B", "text": "u"}\n', r":2: duplicate id"),
    ("[1, 2]\n", r":1: expected a JSON object"),
    ("", "no passages"),
])
def test_malformed_corpus_names_file_and_line(tmp_path, content, msg):
    f = tmp_path / "c.jsonl"
    f.write_text(content)
    with pytest.raises(CorpusError, match=msg):
        load_corpus_jsonl(f)


def test_missing_file(tmp_path):
    with pytest.raises(CorpusError, match="file not found"):
        load_corpus_jsonl(tmp_path / "nope.jsonl")


def test_split_sentences():
    assert split_sentences("Born 1923. He wrote poems.  \"Quoted\" end") == ("Born 1923.", "He wrote poems.", "\"Quoted\" end")
    assert split_sentences("no break here") == ("no break here",)


def test_a_record_text_keeps_initials_in_their_sentence():
    from rootweaver_innovations.documents.corpus import passage_from_object

    record = {"id": "w1", "title": "doc-1.txt", "text": "S. Sylvan Simon (1910 - 1951) was a director. He died."}
    assert passage_from_object(record, Path("c.jsonl"), 1).sentences == (
        "S. Sylvan Simon (1910 - 1951) was a director.", "He died.")


def test_split_sentences_keeps_initials_and_abbreviations_together_when_asked():
    text = "Kun-Damu ruled c. 2400 BC. J. S. Bach lived in St. Louis (ca. 1700). Born 1923. He wrote."
    assert split_sentences(text, abbreviations=True) == (
        "Kun-Damu ruled c. 2400 BC.", "J. S. Bach lived in St. Louis (ca. 1700).", "Born 1923.", "He wrote.")
    assert split_sentences(text)[0] == "Kun-Damu ruled c."  # the JSONL loaders' rule, as measured
    quoted = 'Julius Caesar "J. C." Watts Jr. (born 1957) is a politician. He played football.'
    assert split_sentences(quoted, abbreviations=True) == (quoted[:60], "He played football.")


@pytest.mark.parametrize("sentence, subject", [
    ("Ibrium (24th century BC), also spelt Ebrium, was the vizier of Ebla.", "Ibrium"),
    ("The Beatles were an English rock band.", "The Beatles"),
    ("University of California, Berkeley is a public university.", "University of California"),
    ("He was the son of his predecessor.", None),
    ("According to Alfonso Archi, he was a contemporary.", None),
    ("buy milk, then call the office.", None),
    ("Install the package with pip.", None),
    ('Judith "Judy" Krantz (nee Tarcher) is a novelist.', "Judith Krantz"),
    ("Harvey Lawrence Pekar (October 8, 1939 - July 12, 2010) was a writer.", "Harvey Pekar"),
    ("Arizona State University (ASU) is a university.", "Arizona State University"),
    ("Live to Dance is a television program.", "Live to Dance"),
    ("The company was founded in 1990.", None),
    ("Drinking water quality standards describe the parameters.", None),
    ("Barry Thomas Cable MBE (born 22 September 1943) is a footballer.", "Barry Cable"),  # post-nominals dropped
    ('Julius Caesar "J. C." Watts Jr. (born November 18, 1957) is a politician.', "Julius Watts"),
    ("Leopold II (5 May 1747 – 1 March 1792) was Holy Roman Emperor.", "Leopold II"),  # a monarch's number stays
    ("Ken Griffey Jr. is a baseball player.", "Ken Griffey"),
    ("Harvey Lawrence Pekar ( ; October 8, 1939 - July 12, 2010) was a writer.", "Harvey Pekar"),
    ("S. Sylvan Simon (March 9, 1910 - May 17, 1951) was a director.", "S. Sylvan Simon"),  # an initial: whole
    ("Similarly, the place of birth is recorded.", None),
    ("They Came to Cordura is a 1959 film.", "They Came to Cordura"),  # a title opening with a pronoun
    ("He Jianjun (born 1960 in Beijing) is a director.", "He Jianjun"),
    ("In 1912, he was elected.", None),
    ("Since 1990 the company had grown.", None),
])
def test_lead_subject_names_what_a_lead_sentence_is_about(sentence, subject):
    from rootweaver_innovations.conventions.wikipedia.subjects import lead_subject, subject_names

    assert lead_subject(sentence) == subject
    assert subject_names(sentence)[:1] == ((subject,) if subject else ())


@pytest.mark.parametrize("sentence, names", [
    ("University, following coach Wallace Wade and his classmates.", ()),  # a window cut mid-sentence
    ("English, characterized by local color regionalism.", ()),
    ("WWGR, commonly called Gator Country 101.9 Music, is a radio station.", ("WWGR",)),  # a lead's apposition
    ("Ibrium (24th century BC), also spelt Ebrium, was the vizier of Ebla.", ("Ibrium",)),
])
def test_a_name_ending_at_a_comma_is_a_subject_only_when_a_lead_goes_on(sentence, names):
    from rootweaver_innovations.conventions.wikipedia.subjects import lead_subject, subject_names

    assert subject_names(sentence) == names
    assert lead_subject(sentence) == sentence.split(",")[0].split(" (")[0]  # the reader's label is unchanged


@pytest.mark.parametrize("sentence, names", [
    ("Samuel Langhorne Clemens (November 30, 1835 - April 21, 1910), better known by his pen name Mark Twain, "
     "was an American writer.",
     ("Samuel Clemens", "Samuel Langhorne Clemens", "Samuel L. Clemens", "Samuel Langhorne", "Mark Twain")),
    ("Vladimir Vladimirovich Nabokov ( ; Russian: Vladimir Nabokov; 22 April 1899 - 2 July 1977) was a writer.",
     ("Vladimir Vladimirovich Nabokov", "Vladimir Nabokov", "Vladimir V. Nabokov", "Vladimir Vladimirovich")),
    ('Edward Michael "Bear" Grylls (born 7 June 1974) is a British adventurer.',
     ("Edward Grylls", "Edward Michael Grylls", "Edward M. Grylls", "Edward Michael", "Bear Grylls")),
    ("Marshall Bruce Mathers III (born October 17, 1972), known professionally as Eminem, is a rapper.",
     ("Marshall Mathers", "Marshall Bruce Mathers", "Marshall B. Mathers", "Marshall Bruce", "Eminem")),
    ("Julio Bracho Gavilán (17 July 1909 – 26 April 1978) was a Mexican film director.",
     ("Julio Gavilán", "Julio Bracho Gavilán", "Julio B. Gavilán", "Julio Bracho")),
    ("Anna Maria Louisa Italiano (September 17, 1931 - June 6, 2005), known as Anne Bancroft, was an actress.",
     ("Anna Italiano", "Anna Maria Louisa Italiano", "Anna M. L. Italiano", "Anne Bancroft")),
    ("Kansas City Southern (KCS) is a railroad.", ("Kansas City Southern",)),
    ("In 1912, he was elected.", ()),
])
def test_subject_names_are_every_name_a_lead_sentence_gives(sentence, names):
    from rootweaver_innovations.conventions.wikipedia.subjects import subject_names

    assert subject_names(sentence) == names


LEADS = ("Marshall Bruce Mathers III (born October 17, 1972), known professionally as Eminem, is a rapper.",
         "Anna Maria Louisa Italiano (September 17, 1931 - June 6, 2005), known as Anne Bancroft, was an actress.",
         "Kansas City Southern (KCS) is a railroad.", "In 1912, he was elected.")


@given(st.sampled_from(LEADS), st.dictionaries(st.sampled_from(
    ("Eminem", "Marshall Mathers", "Marshall Bruce", "Anne Bancroft", "Anna Italiano", "Kansas City Southern")),
    st.integers(0, 3)))
def test_the_usual_name_is_a_name_of_the_lead_counted_at_least_as_often_as_its_subject(sentence, counts):
    from rootweaver_innovations.conventions.wikipedia.subjects import lead_subject, subject_names, usual_name

    name = usual_name(sentence, lambda n: counts.get(n, 0))
    if lead_subject(sentence) is None:
        assert name is None
    else:
        assert name in subject_names(sentence)
        assert counts.get(name, 0) >= counts.get(lead_subject(sentence), 0)
        assert usual_name(sentence, lambda n: 0) == lead_subject(sentence)


def test_a_window_is_labelled_by_the_name_the_other_files_use():
    from rootweaver_innovations.loop.multihop import MultiHopRAG
    from rootweaver_innovations.retrieval.retrievers import BM25Retriever

    windows = [Passage("a#0", "doc-7f.txt", (LEADS[0],)), Passage("a#1", "doc-7f.txt", ("He grew up in Detroit.",))]
    question = "In what city was the rapper of Lose Yourself when he grew up?"
    alone = [f.line for f in MultiHopRAG(BM25Retriever(windows)).multi_hop_search(question).facts]
    assert "Marshall Mathers | He grew up in Detroit." in alone
    song = Passage("b#0", "doc-8e.txt", ("Lose Yourself is a song by Eminem.",))
    beside = [f.line for f in MultiHopRAG(BM25Retriever([*windows, song])).multi_hop_search(question).facts]
    assert "Eminem | He grew up in Detroit." in beside


def test_a_chunk_titled_by_its_lead_takes_the_usual_name_and_a_heading_is_kept():
    from rootweaver_innovations.documents.corpus import Source
    from rootweaver_innovations.loop.multihop import MultiHopRAG
    from rootweaver_innovations.retrieval.retrievers import BM25Retriever

    def corpus(headings):
        return [Passage("a.txt#0", "Marshall Mathers", (LEADS[0], "He grew up in Detroit."), Source("a.txt", headings)),
                Passage("b.txt#0", "Lose Yourself", ("Lose Yourself is a song by Eminem.",), Source("b.txt"))]

    question = "In what city was the rapper of Lose Yourself when he grew up?"
    titles = {f.passage_id: f.title for f in MultiHopRAG(BM25Retriever(corpus(()))).multi_hop_search(question).facts}
    assert titles == {"a.txt#0": "Eminem", "b.txt#0": "Lose Yourself"}
    headed = MultiHopRAG(BM25Retriever(corpus(("Marshall Mathers",)))).multi_hop_search(question).facts
    assert {f.title for f in headed} == {"Marshall Mathers", "Lose Yourself"}


def test_a_document_given_as_the_corpus_file_is_told_to_give_its_folder(tmp_path):
    note = tmp_path / "notes.md"
    note.write_text("# Harbour\n\nThe harbour reopened in May.\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"notes\.md:1: malformed JSON \(Expecting value\); a corpus file must be "
                                          r"JSONL: to index documents, give their folder"):
        load_corpus_jsonl(note)
    rows = tmp_path / "rows.jsonl.gz"
    rows.write_bytes(gzip.compress(b"# not json\n"))
    with pytest.raises(CorpusError, match=r"rows\.jsonl\.gz:1: malformed JSON \(Expecting value\)$"):
        load_corpus_jsonl(rows)
