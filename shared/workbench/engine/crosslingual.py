"""A cross-lingual lexicon: the catalog's common actions and objects in the languages agents'
users write in (Spanish, German, French, Portuguese, Japanese, Chinese, Korean, Hindi), read as the
English words the catalog uses.

`translate` rewrites a query before the lexical engine tokenises it: each foreign word found is
replaced by its English word(s), and, once one is found, the language's function words (articles,
particles, postpositions) are dropped, so they neither match nor count against the score. Latin and
Devanagari words are looked up whole (accents folded, lower-cased), or by their first letters for
the longer stems listed with a trailing `*`; Chinese, Japanese and Korean words are found as
substrings (they are written without spaces). Loaded on the first query that needs it.

Words are listed by meaning, from ordinary vocabulary, not from any query set (the set written
after this lexicon, bench/search_queries_untuned.py MULTILINGUAL_B, measures it).
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["translate"]

# english: foreign forms (all languages mixed; a trailing * is a prefix of 5+ letters)
_LEXICON = """
create: crea crear creame cree crie criar cria erstelle erstellen erstell* anlegen lege creer cree creez cria
 nouveau nouvelle nuevo nueva neue neuen neues novo nova 作成 新規 创建 新建 만들 생성 बनाओ बनाएं बनाइए बना
send: envia enviar envie envoie envoyer envoyez manda mandar sende senden schick* schicke 送信 送って 送る 发送 发 보내 전송 भेजो भेजें भेजिए भेज
list: lista listar liste lister listen auflisten 一覧 列出 列表 목록 सूची
show: muestra muestrame mostrar mostre mostra zeig zeige zeigen anzeigen affiche afficher montre montrer 見せて 表示 显示 查看 보여 दिखाओ दिखाएं दिखा
search: busca buscar busque pesquise pesquisar procure sucht suche suchen such recherche rechercher cherche chercher 検索 探して 搜索 查找 查询 검색 찾아 खोजो खोजें खोज
get: obtener obtenga obter hole holen recupere recuperer 取得 获取 가져 प्राप्त
read: lee leer lea leia ler lies lesen lis lire 読み 読んで 读取 阅读 읽어 पढ़ो पढ़ें पढ़
delete: borra borrar elimina eliminar apaga apague apagar exclua excluir losche loschen losch* entferne entfernen supprime supprimer efface effacer 削除 消して 删除 삭제 지워 हटाओ हटाएं मिटाओ
update: actualiza actualizar atualize atualizar aktualisiere aktualisieren andere andern mets modifie modifier modifique 更新 変更 更新 修改 업데이트 수정 बदलो अपडेट
add: anade anadir agrega agregar adicione adicionar fuge hinzufugen ajoute ajouter 追加 添加 加 추가 जोड़ो जोड़ें जोड़
upload: sube subir subid envie carregue carregar hochladen televerse televerser 上传 アップロード 업로드 अपलोड
download: descarga descargar baixe baixar herunterladen herunter telecharge telecharger ダウンロード 下载 다운로드 डाउनलोड
share: comparte compartir compartilhe compartilhar teile teilen partage partager 共有 分享 共享 공유 साझा
merge: fusiona fusionar mescle mesclar merge zusammenfuhren fusionne fusionner マージ 合并 병합 머지 मर्ज
assign: asigna asignar atribua atribuir zuweisen weise assigne assigner 割り当て 分配 指派 할당 असाइन
move: mueve mover mova verschiebe verschieben deplace deplacer 移動 移动 이동
cancel: cancela cancelar kundige kundigen storniere annule annuler 解約 キャンセル 取消 취소 रद्द
refund: reembolsa reembolsar reembolse reembolso erstatte erstattung ruckerstattung rembourse rembourser remboursement 返金 退款 환불 रिफंड
run: ejecuta ejecutar execute executar fuhre ausfuhren fuhr* execute executer lance lancer 実行 运行 执行 실행 चलाओ
reply: responde responder antworte antworten reponds repondre 返信 回复 답장 जवाब
invite: invita invitar convide convidar einladen invite inviter 招待 邀请 초대 आमंत्रित
close: cierra cerrar feche fechar schliesse schliessen ferme fermer 閉じ 关闭 닫아 बंद
archive: archiva archivar arquive arquivar archiviere archivieren archive archiver アーカイブ 归档 보관 संग्रह
clear: limpia limpiar limpe limpar leere leeren efface vide vider クリア 清除 清空 지워 साफ
click: clic clica clique klicke klicken clique cliquer クリック 点击 클릭 क्लिक
type: escribe escriba digite tippe eingeben tape saisis saisir 入力 输入 입력 टाइप
screenshot: captura capture bildschirmfoto screenshot スクリーンショット 截图 截屏 스크린샷 स्क्रीनशॉट
export: exporta exportar exportiere exportieren exporte exporter エクスポート 导出 내보내 निर्यात
comment: comentario comentarios comente kommentar kommentare kommentiere commentaire commentaires commente コメント 评论 留言 댓글 코멘트 टिप्पणी
issue: incidencia incidencias tarea tareas problema problemas aufgabe aufgaben vorgang probleme tache taches tarefa tarefas 課題 イシュー 问题 任务 이슈 과제 इश्यू समस्या
ticket: ticket tickets tiquete chamado chamados ticket チケット 工单 票 티켓 टिकट टिकट्स
message: mensaje mensajes mensagem mensagens nachricht nachrichten message messages メッセージ 消息 信息 메시지 메세지 संदेश मैसेज
channel: canal canales canais kanal kanale kanaele chaine chaines canaux チャンネル 频道 채널 चैनल
email: correo correos email mail e-mail emails メール 邮件 电子邮件 메일 이메일 ईमेल मेल
event: evento eventos termin termine ereignis evenement evenements reunion reuniones reuniao reunioes besprechung イベント 予定 会議 活动 事件 日程 会议 이벤트 일정 회의 इवेंट मीटिंग
calendar: calendario agenda kalender calendrier カレンダー 日历 日程表 캘린더 달력 कैलेंडर
file: archivo archivos arquivo arquivos datei dateien fichier fichiers ファイル 文件 파일 फ़ाइल फाइल
folder: carpeta carpetas pasta pastas ordner dossier dossiers フォルダ 文件夹 폴더 फ़ोल्डर फोल्डर
page: pagina paginas seite seiten page pages ページ 页面 페이지 पेज पृष्ठ
database: datenbank データベース 数据库 데이터베이스 डेटाबेस
record: registro registros datensatz datensatze enregistrement enregistrements レコード 记录 레코드 रिकॉर्ड
table: tabla tabela tabelle table テーブル 表格 表 테이블 टेबल तालिका
row: fila filas linha linhas zeile zeilen ligne lignes 行 行を 行 행 पंक्ति
contact: contacto contactos contato contatos kontakt kontakte contact contacts 連絡先 联系人 연락처 संपर्क
deal: negocio negocios trato tratos oportunidad oportunidade deal deals affaire affaires 取引 商机 交易 거래 डील
company: empresa empresas firma unternehmen entreprise societe 会社 公司 회사 कंपनी
customer: cliente clientes kunde kunden client clients 顧客 客户 고객 ग्राहक
invoice: factura facturas fatura faturas rechnung rechnungen facture factures 請求書 发票 账单 인보이스 청구서 चालान इनवॉइस
subscription: suscripcion assinatura abonnement abo サブスクリプション 訂閱 订阅 구독 सदस्यता
payment: pago pagos pagamento pagamentos zahlung zahlungen paiement paiements 支払い 付款 支付 결제 भुगतान
product: producto productos produto produtos produkt produkte produit produits 商品 製品 产品 상품 제품 उत्पाद
price: precio precios preco precos preis preise prix 価格 价格 가격 कीमत
link: enlace vinculo link liens lien リンク 链接 링크 लिंक
repo: repositorio repositorios repositório repository depot リポジトリ 仓库 저장소 레포 रिपॉजिटरी
branch: rama ramas ramo ramos zweig branche branches ブランチ 分支 브랜치 ब्रांच
pr: プルリクエスト 拉取请求 合并请求 풀리퀘스트 리퀘스트
commit: コミット 提交 커밋 कमिट
note: nota notas notiz notizen note notes メモ ノート 笔记 备忘 메모 노트 नोट नोट्स
vault: boveda cofre tresor coffre 金庫 保险库 金库 금고 तिजोरी
history: historial historico historique verlauf 履歴 历史 历史记录 기록 इतिहास
trash: papelera lixeira papierkorb corbeille ゴミ箱 回收站 垃圾箱 휴지통
save: guarda guardar guarde salva salvar speichere speichern speicher enregistre enregistrer sauvegarde 保存 저장 सहेजो सहेजें
secret: secreto secretos segredo geheimnis schlussel cle secret 秘密 シークレット 密钥 비밀 시크릿 सीक्रेट
browser: navegador browser navigateur ブラウザ 浏览器 브라우저 ब्राउज़र
spreadsheet: planilha tabellenblatt tabellenkalkulation スプレッドシート 电子表格 스프레드시트 स्प्रेडशीट
sheet: hoja hojas folha blatt feuille シート 工作表 시트 शीट
range: rango intervalo bereich plage 範囲 范围 범위 रेंज
dashboard: painel dashboard ダッシュボード 仪表板 仪表盘 대시보드 डैशबोर्ड
chart: grafico graficos diagramm graphique チャート グラフ 图表 차트 चार्ट
query: consulta consultas abfrage requete クエリ 查询 쿼리 क्वेरी
project: proyecto proyectos projeto projetos projekt projekte projet projets プロジェクト 项目 프로젝트 प्रोजेक्ट
team: equipo equipe team equipe チーム 团队 팀 टीम
user: usuario usuarios benutzer nutzer utilisateur utilisateurs ユーザー 用户 사용자 유저 उपयोगकर्ता
label: etiqueta etiquetas label etikett libelle ラベル 标签 라벨 레이블 लेबल
draft: borrador rascunho entwurf brouillon 下書き 草稿 초안 ड्राफ्ट
attachment: adjunto anexo anhang 添付 附件 첨부 अटैचमेंट
report: informe reporte relatorio bericht rapport レポート 报告 报表 보고서 리포트 रिपोर्ट
space: espacio espaco bereich espace スペース 空间 스페이스 स्पेस
board: tablero quadro board tableau ボード 看板 보드 बोर्ड
sprint: sprint スプリント 冲刺 스프린트 स्प्रिंट
balance: saldo kontostand solde 残高 余额 잔액 बैलेंस
button: boton botao schaltflache knopf bouton ボタン 按钮 버튼 बटन
app: aplicacion aplicativo app anwendung application アプリ 应用 앱 ऐप
server: servidor server serveur サーバー 服务器 서버 सर्वर
text: texto text texte テキスト 文章 本文 文本 텍스트 टेक्स्ट
all: todos todas todo toda alle tous toutes すべて 全部 所有 모든 सभी सब
recent: reciente recientes recente letzte neueste recent recents 最近 最新 최근 हाल
release: 发布 リリース 릴리스 릴리즈 रिलीज़ रिलीज
open: abre abrir abra offne offnen ouvre ouvrir 開いて 打开 열어 खोलो
"""

# Situations and symptoms (engine/search.py _SYMPTOMS), written by meaning in each language: each
# form, found in the query, is replaced by an English phrase the symptom reader knows. Forms are
# separated by `|`; a trailing * takes any ending (Latin scripts); other scripts match as written
# inside a word. Longer forms are tried first.
_SITUATIONS = """
out of date: desactualizad* | no esta al dia | sigue diciendo | todavia dice | veraltet* | nicht mehr aktuell |
 nicht aktuell | steht noch | zeigt noch | pas a jour | plus a jour | perime* | dit encore | affiche encore |
 desatualizad* | ainda diz | ainda mostra | 古いまま | 古くなって | 最新ではない | 更新されていない | 过时 | 不是最新 |
 还是旧的 | 没有更新 | 오래된 | 최신이 아니 | 업데이트되지 않 | 아직 열려 | 아직 열린 | पुराना | पुरानी | अपडेट नहीं
charged: cobraron | cobrado | cobro | cobrar | abgebucht | belastet | debite* | preleve* | cobraram | cobrou |
 請求され | 引き落とされ | 課金され | 扣了 | 扣款 | 收费了 | 결제됐 | 결제되었 | 청구됐 | 청구되었 | पैसे काट | चार्ज किया | चार्ज हो
twice: dos veces | doble cobro | zweimal | doppelt | deux fois | duas vezes | 二重 | 二回 | 2回 | 两次 | 重复扣 | 重复收 | 두 번 |
 이중 | 중복 결제 |
 दो बार
unassigned: nadie se ocupa | nadie esta trabajando | nadie atiende | sin asignar | sin responsable |
 niemand kummert sich | niemand bearbeitet | niemand arbeitet | keiner kummert sich | nicht zugewiesen |
 personne ne s'occupe | personne ne travaille | non assigne* | ninguem esta trabalhando | ninguem cuida |
 sem responsavel | nao atribuid* | 誰も対応していない | 誰も担当していない | 担当者がいない | 未割り当て | 没人处理 | 没有人处理 |
 没人负责 | 无人负责 | 未分配 | 아무도 담당 | 담당자가 없 | 아무도 처리 | 미할당 | कोई काम नहीं कर रहा | किसी को असाइन नहीं |
 कोई नहीं देख रहा
without reply: sin respuesta | espera una respuesta | esperando una respuesta | esperando respuesta |
 no ha respondido | nadie ha respondido | wartet auf eine antwort | wartet auf antwort | keine antwort |
 ohne antwort | unbeantwortet | attend une reponse | attendent une reponse | sans reponse | pas de reponse |
 n'a pas repondu | sem resposta | esperando uma resposta | esperando resposta | aguardando resposta |
 aguardando uma resposta | nao respondeu | ninguem respondeu | 返信がない | 返事がない | 返信を待って | 回答がない | 未返信 |
 没有回复 | 没人回复 | 等待回复 | 等回复 | 未回复 | 답장이 없 | 답변이 없 | 응답이 없 | 답을 기다 | 답변을 기다 | जवाब नहीं |
 जवाब का इंतज़ार | जवाब का इंतजार | उत्तर नहीं
cannot find: no encuentro | no puedo encontrar | no encuentra | finde nicht | nicht finden | je ne trouve pas |
 ne trouve pas | introuvable | nao encontro | nao consigo encontrar | nao acho | 見つからない | 見つけられない | 找不到 |
 没找到 | 찾을 수 없 | 못 찾 | नहीं मिल रहा | नहीं मिल रही
cannot access: no tiene acceso | no tienen acceso | sin acceso | acceso denegado | no puede abrir | no puede ver |
 keinen zugriff | kein zugriff | zugriff verweigert | nicht offnen | n'a pas acces | n'ont pas acces |
 pas acces | acces refuse | ne peut pas ouvrir | ne peut pas voir | nao tem acesso | sem acesso | acesso negado |
 nao consegue abrir | nao consegue ver | アクセスできない | 見られない | 開けない | 権限がない | 无法访问 | 没有权限 | 打不开 |
 看不到 | 접근할 수 없 | 권한이 없 | 볼 수 없 | 열 수 없 | एक्सेस नहीं | खोल नहीं पा | देख नहीं पा | अनुमति नहीं
missing: todavia no esta | aun no esta | todavia no existe | no existe | noch nicht im | noch nicht in |
 gibt es noch nicht | existiert noch nicht | fehlt | n'est pas encore | pas encore dans | n'existe pas |
 ainda nao esta | ainda nao existe | nao existe | まだ登録されていない | 登録されていない | 記録されていない | 存在しない |
 还没有 | 没有记录 | 不存在 | 아직 없 | 등록되지 않 | 기록되지 않 | 존재하지 않 | अभी तक नहीं | मौजूद नहीं
unaware: no sabe todavia | no saben todavia | todavia no sabe* | no se ha enterado | no se han enterado |
 weiss noch nicht | wissen noch nicht | noch nicht informiert | ne sait pas encore | ne savent pas encore |
 pas au courant | ainda nao sabe* | nao foi avisad* | まだ知らない | 知らされていない | 还不知道 | 아직 모르 | 모르고 있 |
 पता नहीं | नहीं पता | मालूम नहीं
clashes: coincide con | se solapa* | choca con | conflicto con | kollidiert | uberschneidet | uberschneiden |
 doppelt gebucht | en conflit | chevauche* | conflita | sobrepoe | 重なって | 重複して | かぶって | ダブルブッキング | 冲突 |
 撞车 | 重叠 | 겹쳐 | 겹치 | 충돌 | टकरा
flaky: fallo sin motivo | fallo sin razon | intermitente | ohne grund fehlgeschlagen | sporadisch | instabil |
 echoue sans raison | a echoue sans raison | aleatoire | falhou sem motivo | falhou sem razao | instavel |
 理由もなく失敗 | たまに失敗 | 不安定 | 无缘无故失败 | 偶尔失败 | 不稳定 | 이유 없이 실패 | 가끔 실패 | 불안정 | बिना वजह फेल |
 बिना कारण फेल
does not want to pay: no quiere pagar | no quiere seguir pagando | dejar de pagar | will nicht mehr zahlen |
 mochte nicht mehr zahlen | nicht mehr bezahlen | ne veut plus payer | ne veulent plus payer | arreter de payer |
 nao quer mais pagar | nao quer pagar | parar de pagar | 払いたくない | 支払いをやめ | 不想再付费 | 不想付费 | 不想再为 |
 不想续费 | 不再付费 | 결제하고 싶지 않 | 결제를 중단 | 구독을 그만 | पैसे नहीं देना | भुगतान नहीं करना | भुगतान बंद
obsolete: ya no se necesita | ya no sirve | no sirve | nicht mehr gebraucht | nicht mehr benotigt | uberflussig |
 ne sert plus | plus besoin | nao precisa mais | 不要にな | 不要な | いらない | もう使わない | 不需要 | 没用 | 多余 | 필요 없 | 쓸모없 |
 ज़रूरत नहीं | जरूरत नहीं | बेकार
"""

# Function words of each language: dropped once the query is known to be in one of them.
_FUNCTION = """
me el la los las un una unos unas de del al en para con por mi mis tu su sus que y o a este esta esto ese esa
der die das den dem des ein eine einen einem einer im in fur mit von zu zum zur und auf an aus mein meine meinen meinem mir mich ich dir
le la les l d qu un une des du de en pour avec dans et sur mon ma mes ce cet cette au aux
o a os as um uma de do da dos das em no na nos nas para com e meu minha meus minhas esse essa este esta
の を に で は が と へ から まで して ください て
的 在 里 中 把 给 一个 一条 一封 我 我的 这个 请 所有 和 上
을 를 에 에서 의 이 가 은 는 으로 로 줘 주세요 해줘 해 좀
में पर को का की के से है हैं और मेरे मेरा मेरी यह सभी
"""

_DEVANAGARI = re.compile("[\u0900-\u097f]")
_HINDI_ENDINGS = ("ियों", "ों", "ें", "एं", "ाएं")
_PUNCTUATION = "\"'.,;:!?¿¡()[]{}«»“”‘’、。，！？：；（）"
_PIECES = re.compile(r"[-/'’_]+")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_KANA_HAN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    out = "".join(
        ch
        for i, ch in enumerate(decomposed)
        if not (unicodedata.combining(ch) and ord(decomposed[i - 1]) < 0x250)
    )
    return unicodedata.normalize("NFKC", out).casefold()


@functools.cache
def _situations() -> tuple[re.Pattern[str], dict[str, str]]:
    """One pattern of every situation form (longest first) and each form's English phrase."""
    meaning: dict[str, str] = {}
    english = ""
    for line in _SITUATIONS.strip().splitlines():
        if ":" in line and not line.startswith(" "):
            english, _, line = line.partition(":")
        for form in line.split("|"):
            form = " ".join(_fold(form).split())
            if form:
                meaning.setdefault(form, english)
    parts = []
    for form in sorted(meaning, key=len, reverse=True):
        if _CJK.search(form) or not form.isascii():
            parts.append(re.escape(form))
        elif form.endswith("*"):
            parts.append(r"(?<!\w)" + re.escape(form[:-1]) + r"\w*")
        else:
            parts.append(r"(?<!\w)" + re.escape(form) + r"(?!\w)")
    stems = sorted(((f.rstrip("*"), e) for f, e in meaning.items()), key=lambda p: -len(p[0]))
    return re.compile("|".join(parts)), dict(stems)


def _situation(match: re.Match[str]) -> str:
    meaning = _situations()[1]
    text = match.group()
    english = meaning.get(text) or next(e for f, e in meaning.items() if text.startswith(f))
    return f" {english} "


@functools.cache
def _tables() -> tuple[
    dict[str, str], list[tuple[str, str]], list[tuple[str, str]], frozenset[str], list[str]
]:
    """(whole word → English, prefix → English, substring → English (longest first), function
    words, function substrings of CJK (longest first))."""
    words: dict[str, str] = {}
    prefixes: list[tuple[str, str]] = []
    substrings: list[tuple[str, str]] = []
    english = ""
    for line in _LEXICON.strip().splitlines():
        if ":" in line and not line.startswith(" "):
            english, _, line = line.partition(":")
        for form in line.split():
            form = _fold(form)
            if form == english:  # the English word itself ("message" in French) says nothing new
                continue
            if _CJK.search(form):
                substrings.append((form, english))
            elif form.endswith("*"):
                prefixes.append((form[:-1], english))
            else:
                words.setdefault(form, english)
    substrings.sort(key=lambda p: -len(p[0]))
    function = [_fold(w) for w in _FUNCTION.split()]
    cjk_function = sorted((w for w in function if _CJK.search(w)), key=len, reverse=True)
    return words, prefixes, substrings, frozenset(w for w in function if not _CJK.search(w)), cjk_function


def translate(query: str) -> str:
    """The query with the lexicon's foreign words read as English (unchanged if it has none)."""
    words, prefixes, substrings, function, cjk_function = _tables()
    text = _fold(query).replace("\u2019", "'")
    pattern, _ = _situations()
    text, situations = pattern.subn(_situation, text)
    found = bool(situations)
    if _CJK.search(text):
        for form, meaning in substrings:
            if form in text:
                text = text.replace(form, f" {meaning} ")
                found = True
    out: list[str] = []
    for match in re.finditer(r"\S+", text):
        token = match.group()
        whole = token.strip(_PUNCTUATION)
        pieces = [whole] if whole in words else _PIECES.split(whole)
        parts = []
        for word in pieces:
            english = words.get(word)
            if english is None and len(word) >= 5:
                english = next((e for p, e in prefixes if word.startswith(p)), None)
            if english is None and _DEVANAGARI.match(word):  # ग्राहकों → ग्राहक (plural, oblique)
                english = next(
                    (
                        words[word[: -len(end)]]
                        for end in _HINDI_ENDINGS
                        if word.endswith(end) and word[: -len(end)] in words
                    ),
                    None,
                )
            if english is not None:
                parts.append(english)
                found = True
            elif word:
                parts.append(word)
        out.append(" ".join(dict.fromkeys(parts)) if found else token)
    if not found:
        return query
    kept = [w for w in " ".join(out).split() if w not in function]
    result = " ".join(kept)
    for particle in cjk_function:
        result = result.replace(particle, " ")
    # What is left of a Chinese or Japanese run after its words were read is endings and particles:
    # left out. Korean is written in words: one left over is a word the lexicon does not know
    # ("오늘 뉴스": today's news), which counts against the score like an unknown English word.
    return " ".join(w for w in result.split() if not (_KANA_HAN.search(w) and len(w) <= 2))
